// The official A2A JavaScript SDK (@a2a-js/sdk 1.3.0) as a client of an agent: reads the
// agent's card, picks <binding> (JSONRPC, HTTP+JSON or GRPC) and checks what a client sees.
// Prints one JSON line per check; exits non-zero at the first failed check.
//
//   node a2a_client.mjs <agent-base-url> <binding>
//
// The agent behaves by messageId prefix as the A2A TCK requires (the gateway's built-in `tck`
// agent, or tests/python/a2a_tck_agent.py behind the gateway).
import { randomUUID } from "node:crypto";
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from "@a2a-js/sdk/client";
import { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc";

const [base, binding] = process.argv.slice(2);
const ROLE_USER = 1;
const COMPLETED = 3;
const CANCELED = 5;
const INPUT_REQUIRED = 6;

function check(name, ok, detail = {}) {
  console.log(JSON.stringify({ check: name, ok: Boolean(ok), ...detail }));
  if (!ok) {
    process.exit(1);
  }
}

function message(prefix, taskId = "") {
  return {
    messageId: `${prefix}-${randomUUID()}`,
    contextId: "",
    taskId,
    role: ROLE_USER,
    parts: [{ content: { $case: "text", value: "hello" }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

const send = (m, configuration = undefined) => ({ tenant: "", message: m, configuration, metadata: undefined });
const isTask = (r) => r && r.status !== undefined;
const text = (m) => (m?.parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");

const factory = new ClientFactory({
  transports: [new JsonRpcTransportFactory(), new RestTransportFactory(), new GrpcTransportFactory()],
  preferredTransports: [binding],
});
const client = await factory.createFromUrl(base);

const done = await client.sendMessage(send(message("tck-complete-task")));
check("send: a completed task", isTask(done) && done.status.state === COMPLETED, { state: done?.status?.state });
check("its final message", text(done.status.message) === "Hello from TCK", { text: text(done.status.message) });

const got = await client.getTask({ tenant: "", id: done.id, historyLength: undefined });
check("get: the same task", got.id === done.id && got.status.state === COMPLETED);

const answer = await client.sendMessage(send(message("tck-message-response")));
check("a message answer is a message", !isTask(answer) && text(answer) === "Direct message response", {
  answer,
});

const events = [];
for await (const ev of client.sendMessageStream(send(message("tck-stream-001")))) {
  events.push(ev.payload?.$case);
  if (ev.payload?.$case === "statusUpdate" && ev.payload.value.status.state === COMPLETED) {
    break;
  }
}
check("stream: task, working, artifact, completed", events[0] === "task" && events.includes("artifactUpdate") && events.at(-1) === "statusUpdate", {
  events,
});

const streamedMessage = [];
for await (const ev of client.sendMessageStream(send(message("tck-message-response")))) {
  streamedMessage.push(ev.payload?.$case);
}
check("a streamed message answer is one message", streamedMessage.length === 1 && streamedMessage[0] === "message", {
  events: streamedMessage,
});

const waiting = await client.sendMessage(send(message("tck-input-required")));
check("input required", isTask(waiting) && waiting.status.state === INPUT_REQUIRED, { state: waiting?.status?.state });
const follow = await client.sendMessage(send(message("tck-complete-task", waiting.id)));
check("a follow-up completes the same task", isTask(follow) && follow.id === waiting.id && follow.status.state === COMPLETED, {
  state: follow?.status?.state,
});

const open = await client.sendMessage(send(message("tck-input-required")));
const canceled = await client.cancelTask({ tenant: "", id: open.id, metadata: undefined });
check("cancel", canceled.status.state === CANCELED, { state: canceled.status.state });

const listed = await client.listTasks({ tenant: "", contextId: "", status: 0, pageSize: 100, pageToken: "", historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: undefined });
const ids = new Set(listed.tasks.map((t) => t.id));
check("list: every task made here", [done.id, waiting.id, open.id].every((id) => ids.has(id)), { listed: listed.tasks.length });

let missing;
try {
  await client.getTask({ tenant: "", id: "no-such-task", historyLength: undefined });
} catch (e) {
  missing = e;
}
check("an unknown task is an error", missing !== undefined, { error: String(missing) });
