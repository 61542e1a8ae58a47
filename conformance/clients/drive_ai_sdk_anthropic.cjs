'use strict';
// Driver: the Vercel AI SDK (`ai`) with its Anthropic provider, `@ai-sdk/anthropic`, pointed at
// DeepSeek's Anthropic Messages surface. Thinking and effort go in `providerOptions.anthropic`.
// The AI SDK has no read timeout, only an abort signal for the whole call: none is set.
const { Driver } = require('./driverkit.cjs');
const { createAnthropic } = require('@ai-sdk/anthropic');
const aiSdk = require('./ai_sdk.cjs');

const driver = new Driver({
  client: 'ai-sdk-anthropic', protocols: ['anthropic'], packages: ['ai', '@ai-sdk/anthropic'],
  options: { max_retries: "streamText's maxRetries (the AI SDK's default is 2)" },
  tries: [{ max_retries: '0' }, { max_retries: '5' }],
  unsupported: ['strict_tools', 'system_in_history'],
});

async function main() {
  if (!driver.hello()) return;
  const task = driver.task;
  // The provider appends `/messages` to its base URL, which ends in `/v1` by default.
  const model = createAnthropic({ baseURL: `${task.base_url}/v1`, apiKey: task.api_key })(task.model);
  const o = task.options;
  const anthropic = {};
  if (o.thinking === false) anthropic.thinking = { type: 'disabled' };
  if (o.thinking === true) anthropic.thinking = { type: 'enabled', budgetTokens: 1024 };
  if (o.reasoning_effort !== null) anthropic.effort = o.reasoning_effort;
  const settings = { ...aiSdk.settings(task, driver.options()), providerOptions: { anthropic } };
  const history = aiSdk.modelMessages(task);
  await driver.play((k, step) => aiSdk.call({ model, task, history, step, settings }));
}

main().catch((err) => { process.stderr.write(`${err?.stack ?? err}\n`); process.exit(1); });
