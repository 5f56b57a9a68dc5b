//! A2A JSON-RPC request bodies, as `POST /a2a/<agent>` reads them: JSON, the envelope, and
//! every operation's params. Any input: an operation or a protocol error, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|body: &[u8]| {
    let _ = switchyard_a2a::http::decode_jsonrpc(body);
});
