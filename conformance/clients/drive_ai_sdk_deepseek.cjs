'use strict';
// Driver: the Vercel AI SDK (`ai`) with its DeepSeek provider, `@ai-sdk/deepseek`, on Chat
// Completions. Thinking and effort go in `providerOptions.deepseek`, as the provider documents.
// The AI SDK has no read timeout, only an abort signal for the whole call: none is set, so a
// stalled stream waits until the runner's budget ends it.
const { Driver } = require('./driverkit.cjs');
const { createDeepSeek } = require('@ai-sdk/deepseek');
const aiSdk = require('./ai_sdk.cjs');

const driver = new Driver({
  client: 'ai-sdk-deepseek', protocols: ['chat'], packages: ['ai', '@ai-sdk/deepseek'],
  options: { max_retries: "streamText's maxRetries (the AI SDK's default is 2)" },
  tries: [{ max_retries: '0' }, { max_retries: '5' }],
  unsupported: ['strict_tools'],
  known: {
    ...Object.fromEntries(['rt-thinking-tool-call', 'rt-three-steps-passback-kept'].map((id) => [id,
      'sends tool-call arguments back re-encoded (parsed, then `JSON.stringify`), not as the bytes the model sent'])),
    ...Object.fromEntries(['err-inband-error-object', 'err-event-error'].map((id) => [id,
      'an in-band error reaches the caller as a plain object, not an AI SDK error, its `code` and `type` lost'])),
  },
});

async function main() {
  if (!driver.hello()) return;
  const task = driver.task;
  const model = createDeepSeek({ baseURL: task.base_url, apiKey: task.api_key })(task.model);
  const o = task.options;
  const deepseek = {};
  if (o.thinking !== null) deepseek.thinking = { type: o.thinking ? 'enabled' : 'disabled' };
  if (o.reasoning_effort !== null) deepseek.reasoningEffort = o.reasoning_effort;
  const settings = { ...aiSdk.settings(task, driver.options()), providerOptions: { deepseek } };
  const history = aiSdk.modelMessages(task);
  await driver.play((k, step) => aiSdk.call({ model, task, history, step, settings }));
}

main().catch((err) => { process.stderr.write(`${err?.stack ?? err}\n`); process.exit(1); });
