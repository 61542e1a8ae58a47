'use strict';
// Driver: the official `@anthropic-ai/sdk` for Node against DeepSeek's Anthropic Messages
// surface. Each call streams through `client.messages.stream(...)`; the final message's content
// blocks go back into the history as they are (thinking blocks with their signatures), and the
// tool results of a turn share one user message. Its `timeout` is the one timeout it has, given
// the task's read timeout.
const { Driver, describeError, observation, resultFor } = require('./driverkit.cjs');
const { Anthropic, AnthropicError } = require('@anthropic-ai/sdk');

const driver = new Driver({
  client: 'anthropic-node', protocols: ['anthropic'], packages: ['@anthropic-ai/sdk'],
  options: { max_retries: "the client's maxRetries (the SDK's default is 2)" },
  tries: [{ max_retries: '0' }, { max_retries: '5' }],
  unsupported: ['system_in_history'],
  known: {
    'an-delta-unstarted-while-open': 'the SDK\'s accumulator ignores a delta for a block it never saw start, so the '
      + 'stray text is dropped silently and the stream ends `end_turn`',
    'an-redacted-thinking-turn-passed-back': 'the SDK keeps the `redacted_thinking` block in `message.content`, so '
      + 'the documented history pattern sends it back and DeepSeek\'s surface answers 400 (drop those blocks before '
      + 'resending)',
  },
});

function input(args) {
  try { return args ? JSON.parse(args) : {}; } catch { return args; }
}

function messages(task) {
  const out = [];
  for (const m of task.messages) {
    if (m.role === 'assistant') {
      const blocks = [];
      if (m.reasoning !== null) blocks.push({ type: 'thinking', thinking: m.reasoning, signature: '' });
      if (m.content) blocks.push({ type: 'text', text: m.content });
      for (const c of m.tool_calls) blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: input(c.arguments) });
      out.push({ role: 'assistant', content: blocks });
    } else if (m.role === 'tool') {
      const block = { type: 'tool_result', tool_use_id: m.tool_call_id, content: m.content, ...(m.is_error ? { is_error: true } : {}) };
      const last = out[out.length - 1];
      if (last && last.role === 'user' && Array.isArray(last.content) && last.content.every((b) => b.type === 'tool_result')) last.content.push(block);
      else out.push({ role: 'user', content: [block] });
    } else {
      out.push({ role: 'user', content: Array.isArray(m.content) ? m.content : [{ type: 'text', text: m.content }] });
    }
  }
  return out;
}

function params(task) {
  const o = task.options;
  const p = { model: task.model, max_tokens: o.max_tokens ?? 1024 };
  if (task.system !== null) p.system = task.system;
  if (task.tools.length) p.tools = task.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
  if (o.thinking !== null) p.thinking = { type: o.thinking ? 'enabled' : 'disabled' };
  if (o.reasoning_effort !== null) p.output_config = { effort: o.reasoning_effort };
  if (o.temperature !== null) p.temperature = o.temperature;
  if (o.stop !== null) p.stop_sequences = o.stop;
  if (o.tool_choice !== null) {
    p.tool_choice = typeof o.tool_choice === 'string' ? { type: o.tool_choice === 'required' ? 'any' : o.tool_choice }
      : { type: 'tool', name: o.tool_choice.name };
  }
  return p;
}

function observe(message) {
  const obs = observation();
  const blocks = message?.content ?? [];
  const thinking = blocks.filter((b) => b.type === 'thinking').map((b) => b.thinking);
  obs.reasoning = thinking.length ? thinking.join('') : null;
  obs.content = blocks.filter((b) => b.type === 'text').map((b) => b.text).join('');
  // The SDK keeps only the parsed `input` of a tool call; it goes back as an object anyway.
  obs.tool_calls = blocks.filter((b) => b.type === 'tool_use').map((b) => ({ id: b.id ?? null, name: b.name ?? null, arguments: JSON.stringify(b.input ?? {}) }));
  obs.finish = message?.stop_reason ?? null;
  const u = message?.usage;
  if (u && Number.isInteger(u.input_tokens)) {
    obs.usage = { input_tokens: u.input_tokens, output_tokens: u.output_tokens ?? 0, cache_read_tokens: u.cache_read_input_tokens ?? null };
  }
  return obs;
}

async function main() {
  if (!driver.hello()) return;
  const task = driver.task;
  const opts = driver.options();
  const client = new Anthropic({ baseURL: task.base_url, apiKey: task.api_key, timeout: task.timeouts.read_s * 1000,
                                 ...('max_retries' in opts ? { maxRetries: Number(opts.max_retries) } : {}) });
  const history = messages(task);
  const p = params(task);
  await driver.play(async (k, step) => {
    let stream = null;
    let final;
    try {
      stream = client.messages.stream({ ...p, messages: history });
      for await (const _event of stream) { /* the helper assembles the message */ }
      final = await stream.finalMessage();
    } catch (err) {
      let snapshot;
      try { snapshot = stream?.currentMessage; } catch { snapshot = undefined; }
      const obs = observe(snapshot);
      obs.finish = null;
      obs.error = describeError(err, 'anthropic', err instanceof AnthropicError);
      return obs;
    }
    history.push({ role: 'assistant', content: final.content });
    const turn = final.content.filter((b) => b.type === 'tool_use')
      .map((b, i) => ({ type: 'tool_result', tool_use_id: b.id, content: resultFor(step, i) }));
    if (step.then_user !== null) turn.push({ type: 'text', text: step.then_user });
    if (turn.length) history.push({ role: 'user', content: turn });
    return observe(final);
  });
}

main().catch((err) => { process.stderr.write(`${err?.stack ?? err}\n`); process.exit(1); });
