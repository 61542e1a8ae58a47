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
  known: {
    'an-error-event-mid-stream': 'an `error` event reaches the caller as the plain `{type, message}` object it '
      + 'carried, not as an APICallError',
    'an-delta-unstarted-while-open': '`streamText` reports a delta for a block that never started as an error part '
      + 'holding the plain string `text part N not found`, not an AI SDK error',
    'an-delta-before-start': '`streamText` reports a delta before any block started as an error part holding the '
      + 'plain string `text part N not found`, not an AI SDK error',
    'an-redacted-thinking-turn-passed-back': 'the provider keeps `redacted_thinking` as reasoning (its data in '
      + 'provider metadata) and sends it back as a `redacted_thinking` block, which DeepSeek\'s surface answers '
      + 'with 400',
    'an-pause-turn': 'the provider maps `pause_turn` to finishReason `stop` (the raw reason only in '
      + '`rawFinishReason`), so a caller is not told the turn must be resent',
    'an-effort-output-config': 'with `thinking: {type: \'enabled\'}` the provider always adds `budget_tokens` '
      + '(1024 when none is given) next to `output_config.effort`',
  },
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
