//! The MCP face on this process's stdin and stdout, for one caller (`switchyard stdio`):
//! newline-delimited JSON-RPC, as the MCP stdio transport is. A line that is not JSON is
//! answered with a parse error (`-32700`), and one that is JSON but not a JSON-RPC message with
//! an invalid-request error (`-32600`, with its id when it has one); neither reaches the face,
//! and the session goes on.

use std::future::Future;
use std::sync::Arc;

use rmcp::model::{ClientJsonRpcMessage, GetExtensions as _, JsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServiceExt as _};
use serde_json::{Value, json};
use switchyard_contract::Principal;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader, Lines};
use tokio::sync::Mutex;

use crate::McpFace;

/// Serves `face` on stdin and stdout until the client closes them; every message is `caller`'s.
pub async fn serve(face: McpFace, caller: Principal) -> Result<(), String> {
    serve_on(face, caller, tokio::io::stdin(), tokio::io::stdout()).await
}

/// [`serve`] on any pair of streams.
async fn serve_on<R, W>(face: McpFace, caller: Principal, input: R, output: W) -> Result<(), String>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let transport = NdJson { lines: BufReader::new(input).lines(), out: Arc::new(Mutex::new(output)), caller };
    let running = face.serve(transport).await.map_err(|e| e.to_string())?;
    running.waiting().await.map(|_| ()).map_err(|e| e.to_string())
}

/// Newline-delimited JSON-RPC with the caller put on every message the way the HTTP face's
/// authentication puts it on a request (in the request's `http::request::Parts`).
struct NdJson<R, W> {
    lines: Lines<BufReader<R>>,
    out: Arc<Mutex<W>>,
    caller: Principal,
}

async fn write_line<W: AsyncWrite + Unpin>(out: &Mutex<W>, value: &impl serde::Serialize) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut out = out.lock().await;
    out.write_all(&line).await?;
    out.flush().await
}

/// What a line that is no message of the client's is answered with.
fn refusal(line: &str) -> Value {
    let (code, message, id) = match serde_json::from_str::<Value>(line) {
        Err(e) => (-32700, format!("Parse error: {e}"), Value::Null),
        Ok(v) => {
            let id = v.get("id").filter(|id| id.is_string() || id.is_number()).cloned().unwrap_or(Value::Null);
            (-32600, "Invalid Request: not a JSON-RPC message this server takes".to_string(), id)
        }
    };
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

impl<R, W> Transport<RoleServer> for NdJson<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        async move { write_line(&out, &item).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let line = self.lines.next_line().await.ok()??;
            if line.trim().is_empty() {
                continue;
            }
            let mut message: ClientJsonRpcMessage = match serde_json::from_str(&line) {
                Ok(m) => m,
                Err(_) => {
                    write_line(&self.out, &refusal(&line)).await.ok()?;
                    continue;
                }
            };
            let (mut parts, ()) = axum::http::Request::new(()).into_parts();
            parts.extensions.insert(self.caller.clone());
            match &mut message {
                JsonRpcMessage::Request(r) => {
                    r.request.extensions_mut().insert(parts);
                }
                JsonRpcMessage::Notification(n) => {
                    n.notification.extensions_mut().insert(parts);
                }
                _ => {}
            }
            return Some(message);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        let out = self.out.clone();
        async move { out.lock().await.shutdown().await }
    }
}

#[cfg(test)]
mod tests {
    use super::refusal;

    #[test]
    fn a_line_that_is_no_message_gets_the_json_rpc_error_for_it() {
        let garbage = refusal("this is not json");
        assert_eq!((garbage["error"]["code"].as_i64(), &garbage["id"]), (Some(-32700), &serde_json::Value::Null));
        let wrong = refusal(r#"{"jsonrpc": "2.0", "id": 7, "method": 12}"#);
        assert_eq!((wrong["error"]["code"].as_i64(), wrong["id"].as_i64()), (Some(-32600), Some(7)));
    }
}
