//! Two tenants, `red` and `blue`, each with an API key granting every scope: the `[auth]`
//! section the isolation tests share.

/// Red's API key (tenant `red`, subject `red-bot`).
pub const RED: &str = "sk_red_0b9c0ff6d1";
/// Blue's API key (tenant `blue`, subject `blue-bot`).
pub const BLUE: &str = "sk_blue_61c4e2a7aa";
/// Another subject of red's tenant (subject `crimson-bot`), with the same scopes.
pub const CRIMSON: &str = "sk_crimson_7d3e9a1f20";

/// Every scope the gateway knows.
pub const ALL_SCOPES: &str =
    r#"["invocations:read", "invocations:write", "invocations:reconcile", "artifacts:read", "a2a:call", "mcp:call"]"#;

fn sha256_hex(s: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(s.as_bytes()))
}

/// The `[auth]` section with the three keys.
pub fn auth_section() -> String {
    let key = |name: &str, tenant: &str, key: &str| {
        format!(
            "[[auth.api_keys]]\nname = \"{name}\"\nsha256 = \"{}\"\ntenant = \"{tenant}\"\nsubject = \"{name}-bot\"\nscopes = {ALL_SCOPES}\n",
            sha256_hex(key)
        )
    };
    format!(
        "[auth]\nresource = \"https://gateway.test\"\n\n{}\n{}\n{}",
        key("red", "red", RED),
        key("blue", "blue", BLUE),
        key("crimson", "red", CRIMSON)
    )
}
