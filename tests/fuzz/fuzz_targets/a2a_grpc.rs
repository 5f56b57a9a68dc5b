//! A2A gRPC request messages (protobuf), decoded and converted as the gRPC binding does; the
//! first byte picks the message type.
#![no_main]

use prost::Message;

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    let Some((kind, bytes)) = input.split_first() else { return };
    use a2a_pb::pbconv as conv;
    match kind % 4 {
        0 => {
            if let Ok(m) = a2a_pb::SendMessageRequest::decode(bytes) {
                let _ = conv::from_proto_send_message_request(&m);
            }
        }
        1 => {
            if let Ok(m) = a2a_pb::GetTaskRequest::decode(bytes) {
                let _ = conv::from_proto_get_task_request(&m);
            }
        }
        2 => {
            if let Ok(m) = a2a_pb::ListTasksRequest::decode(bytes) {
                let _ = conv::from_proto_list_tasks_request(&m);
            }
        }
        _ => {
            if let Ok(m) = a2a_pb::TaskPushNotificationConfig::decode(bytes) {
                let _ = conv::from_proto_task_push_notification_config(&m);
            }
        }
    }
});
