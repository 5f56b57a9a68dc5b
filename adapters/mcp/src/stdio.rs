//! The MCP face on this process's stdin and stdout, for one caller (`switchyard stdio`).

use std::future::Future;

use rmcp::model::{ClientJsonRpcMessage, GetExtensions as _, JsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::{IntoTransport, Transport};
use rmcp::{RoleServer, ServiceExt as _};
use switchyard_contract::Principal;

use crate::McpFace;

/// Serves `face` on stdin and stdout until the client closes them; every message is `caller`'s.
pub async fn serve(face: McpFace, caller: Principal) -> Result<(), String> {
    let inner = IntoTransport::<RoleServer, std::io::Error, _>::into_transport(rmcp::transport::stdio());
    let running = face.serve(AsCaller { inner, caller }).await.map_err(|e| e.to_string())?;
    running.waiting().await.map(|_| ()).map_err(|e| e.to_string())
}

/// The stdio transport, with the caller put on every message the way the HTTP face's
/// authentication puts it on a request (in the request's `http::request::Parts`).
struct AsCaller<T> {
    inner: T,
    caller: Principal,
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for AsCaller<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        let caller = self.caller.clone();
        let next = self.inner.receive();
        async move {
            let mut message: ClientJsonRpcMessage = next.await?;
            let (mut parts, ()) = axum::http::Request::new(()).into_parts();
            parts.extensions.insert(caller);
            match &mut message {
                JsonRpcMessage::Request(r) => {
                    r.request.extensions_mut().insert(parts);
                }
                JsonRpcMessage::Notification(n) => {
                    n.notification.extensions_mut().insert(parts);
                }
                _ => {}
            }
            Some(message)
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
