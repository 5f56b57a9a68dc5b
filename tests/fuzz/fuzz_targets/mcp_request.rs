//! MCP requests from clients: the JSON-RPC message as rmcp reads it, a `tools/call`'s
//! arguments as the gateway stores them, and a client-supplied `requestState` opened by the
//! gateway's sealing codec (it must refuse anything it did not seal, never panic).
#![no_main]

use rmcp::model::{ClientJsonRpcMessage, RequestStateCodec};

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    let _ = serde_json::from_slice::<ClientJsonRpcMessage>(input);
    let _ = serde_json::from_slice::<switchyard_mcp::upstream::ToolRequest>(input);
    if let Ok(state) = std::str::from_utf8(input)
        && let Ok(codec) = RequestStateCodec::try_new(b"switchyard-fuzz-request-state-key-0123456789".to_vec())
    {
        let _ = codec.open_json_with::<serde_json::Value>(state, b"tenant\nsubject\ntool\nname");
    }
});
