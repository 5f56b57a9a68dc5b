//! Two tenants, `red` and `blue`, each with an API key granting every scope: the `[auth]`
//! section the isolation tests share.

/// Red's API key (tenant `red`, subject `red-bot`).
pub const RED: &str = "sk_red_0b9c0ff6d1";
/// Blue's API key (tenant `blue`, subject `blue-bot`).
pub const BLUE: &str = "sk_blue_61c4e2a7aa";
/// Another subject of red's tenant (subject `crimson-bot`), with the same scopes.
pub const CRIMSON: &str = "sk_crimson_7d3e9a1f20";

/// A tenant-wide reader of red's tenant (subject `scarlet-bot`): every scope and `tasks:admin`.
pub const SCARLET: &str = "sk_scarlet_4e8b2c9d31";

/// Every scope the gateway knows.
pub const ALL_SCOPES: &str = r#"["invocations:read", "invocations:write", "invocations:reconcile", "artifacts:read", "a2a:call", "mcp:call", "policy:read"]"#;

fn sha256_hex(s: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(s.as_bytes()))
}

/// The `[auth]` section with the four keys.
pub fn auth_section() -> String {
    let keyed = |name: &str, tenant: &str, key: &str, scopes: &str| {
        format!(
            "[[auth.api_keys]]\nname = \"{name}\"\nsha256 = \"{}\"\ntenant = \"{tenant}\"\nsubject = \"{name}-bot\"\nscopes = {scopes}\n",
            sha256_hex(key)
        )
    };
    let key = |name: &str, tenant: &str, key: &str| keyed(name, tenant, key, ALL_SCOPES);
    let admin_scopes = ALL_SCOPES.replace(']', r#", "tasks:admin"]"#);
    format!(
        "[auth]\nresource = \"https://gateway.test\"\n\n{}\n{}\n{}\n{}",
        key("red", "red", RED),
        key("blue", "blue", BLUE),
        key("crimson", "red", CRIMSON),
        keyed("scarlet", "red", SCARLET, &admin_scopes)
    )
}
