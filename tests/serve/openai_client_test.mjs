// zerotune serve through the official `openai` npm package, as an application talks to it:
// a plain and a streamed chat completion on the shipped tiny model (CPU), greedy, equal to
// each other; then SIGTERM, and the server exits 0.
// usage: node openai_client_test.mjs ZEROTUNE_BINARY MODEL_DIR NODE_MODULES_DIR
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import assert from "node:assert/strict";
import path from "node:path";

const [binary, model, modules] = process.argv.slice(2);
const OpenAI = createRequire(path.join(path.resolve(modules), "index.js"))("openai").default;

function startServer() {
  const server = spawn(binary, ["serve", "--model_name_or_path", model, "--device", "cpu", "--port", "0",
                                "--api_key", "test-key"], { stdio: ["ignore", "pipe", "inherit"] });
  const port = new Promise((resolve, reject) => {
    let output = "";
    server.stdout.on("data", (data) => {
      output += data;
      const match = output.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (match) resolve(Number(match[1]));
    });
    server.on("exit", (code) => reject(new Error(`zerotune serve exited with ${code} before listening`)));
    setTimeout(() => reject(new Error("zerotune serve did not start within 60 s")), 60000).unref();
  });
  return { server, port };
}

const { server, port } = startServer();
try {
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${await port}/v1`, apiKey: "test-key" });
  const request = { model: path.basename(model), messages: [{ role: "user", content: "Spell out the digits." }],
                    max_tokens: 8, temperature: 0 };

  const whole = await client.chat.completions.create(request);
  assert.equal(whole.object, "chat.completion");
  assert.equal(whole.choices[0].message.role, "assistant");
  assert.equal(whole.usage.completion_tokens, 8);
  const text = whole.choices[0].message.content;
  assert.ok(text.length > 0, "an answer");

  let streamed = "", finish = null, usage = null;
  const stream = await client.chat.completions.create({ ...request, stream: true,
                                                         stream_options: { include_usage: true } });
  for await (const chunk of stream) {
    assert.equal(chunk.object, "chat.completion.chunk");
    if (chunk.usage) usage = chunk.usage;
    if (chunk.choices.length === 0) continue;
    streamed += chunk.choices[0].delta.content ?? "";
    finish = chunk.choices[0].finish_reason ?? finish;
  }
  assert.equal(streamed, text, "the streamed answer is the whole one");
  assert.equal(finish, whole.choices[0].finish_reason);
  assert.deepEqual(usage, whole.usage);

  await assert.rejects(new OpenAI({ baseURL: client.baseURL, apiKey: "wrong" }).models.list(),
                       (error) => error.status === 401);
  console.log("1 passed, 0 failed");
} finally {
  const exited = new Promise((resolve) => server.on("exit", resolve));
  server.kill("SIGTERM");
  const code = await exited;
  if (code !== 0) {
    console.error(`zerotune serve exited with ${code} after SIGTERM`);
    process.exitCode = 1;
  }
}
