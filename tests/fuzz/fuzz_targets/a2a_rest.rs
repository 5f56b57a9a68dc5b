//! A2A HTTP+JSON requests: method, path below `/rest/`, query and body, split from the input
//! (`METHOD path?query` on the first line, the body after it).
#![no_main]

use axum::http::Method;

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    let (head, body) = match input.iter().position(|b| *b == b'\n') {
        Some(i) => (&input[..i], &input[i + 1..]),
        None => (input, &[][..]),
    };
    let head = String::from_utf8_lossy(head);
    let (method, target) = head.split_once(' ').unwrap_or(("POST", &head));
    let Ok(method) = Method::from_bytes(method.as_bytes()) else { return };
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let query: Vec<(String, String)> =
        query.split('&').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let _ = switchyard_a2a::http::decode_rest_request(&method, path, &query, body, true);
});
