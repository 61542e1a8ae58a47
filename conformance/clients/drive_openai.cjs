'use strict';
// Driver: the official `openai` Node SDK, streaming through its helper
// `client.chat.completions.stream(...)`. The helper's final message goes back into the history as
// it is (what a user appends), so reasoning_content, tool-call ids and argument bytes go back as
// the SDK kept them. Thinking is a body field the SDK passes through; its `timeout` is the one
// timeout it has, given the task's read timeout.
const { Driver, describeError, observation, resultFor } = require('./driverkit.cjs');
const { OpenAI } = require('openai');

const driver = new Driver({
  client: 'openai-node', protocols: ['chat'], packages: ['openai'],
  options: { max_retries: "the client's maxRetries (the SDK's default is 2)" },
  tries: [{ max_retries: '0' }, { max_retries: '5' }],
  known: Object.fromEntries(['text-reasoning-then-answer', 'rt-thinking-tool-call', 'rt-three-steps-passback-kept',
                             'rt-client-ids-empty-reasoning'].map((id) => [id,
    'the `chat.completions.stream` helper copies unknown delta fields with `Object.assign`, so each chunk\'s '
    + '`reasoning_content` replaces the last (a later `null` wipes it) and the final message lacks it'])),
});

function messages(task) {
  const out = task.system !== null ? [{ role: 'system', content: task.system }] : [];
  for (const m of task.messages) {
    const msg = { role: m.role, content: m.content };
    if (m.role === 'assistant') {
      if (m.reasoning !== null) msg.reasoning_content = m.reasoning;
      if (m.tool_calls.length) {
        msg.tool_calls = m.tool_calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
      }
    } else if (m.role === 'tool') msg.tool_call_id = m.tool_call_id;
    out.push(msg);
  }
  return out;
}

function params(task) {
  const o = task.options;
  const p = { model: task.model, stream_options: { include_usage: true } };
  if (task.tools.length) {
    p.tools = task.tools.map((t) => ({ type: 'function', function: {
      name: t.name, description: t.description, parameters: t.parameters, ...(t.strict !== null ? { strict: t.strict } : {}) } }));
  }
  if (o.thinking !== null) p.thinking = { type: o.thinking ? 'enabled' : 'disabled' };
  for (const k of ['reasoning_effort', 'max_tokens', 'temperature', 'stop']) if (o[k] !== null) p[k] = o[k];
  if (o.tool_choice !== null) p.tool_choice = typeof o.tool_choice === 'string' ? o.tool_choice : { type: 'function', function: o.tool_choice };
  return p;
}

function observe(completion) {
  const obs = observation();
  const choice = completion?.choices?.[0];
  const message = choice?.message;
  if (message) {
    obs.content = message.content ?? '';
    obs.reasoning = message.reasoning_content ?? null;
    obs.tool_calls = (message.tool_calls ?? []).map((c) => ({ id: c.id ?? null, name: c.function?.name ?? null, arguments: c.function?.arguments ?? '' }));
  }
  obs.finish = choice?.finish_reason ?? null;
  const u = completion?.usage;
  if (u) {
    const cached = u.prompt_tokens_details?.cached_tokens ?? u.prompt_cache_hit_tokens ?? null;
    obs.usage = { prompt_tokens: u.prompt_tokens, output_tokens: u.completion_tokens, cache_read_tokens: cached,
                  reasoning_tokens: u.completion_tokens_details?.reasoning_tokens ?? null };
  }
  return obs;
}

async function main() {
  if (!driver.hello()) return;
  const task = driver.task;
  const opts = driver.options();
  const client = new OpenAI({ baseURL: task.base_url, apiKey: task.api_key, timeout: task.timeouts.read_s * 1000,
                              ...('max_retries' in opts ? { maxRetries: Number(opts.max_retries) } : {}) });
  const history = messages(task);
  const p = params(task);
  await driver.play(async (k, step) => {
    let stream = null;
    let final;
    const seen = { content: '', reasoning: null };
    try {
      stream = client.chat.completions.stream({ ...p, messages: history });
      for await (const chunk of stream) {
        // The helper assembles the message; what streamed is kept for a call that fails.
        const delta = chunk.choices?.[0]?.delta ?? {};
        if (typeof delta.content === 'string') seen.content += delta.content;
        if (typeof delta.reasoning_content === 'string') seen.reasoning = (seen.reasoning ?? '') + delta.reasoning_content;
      }
      final = await stream.finalChatCompletion();
    } catch (err) {
      const obs = observe(stream?.currentChatCompletionSnapshot);
      if (!obs.content && !obs.reasoning) Object.assign(obs, seen);
      obs.finish = null;
      obs.error = describeError(err, 'openai', err instanceof OpenAI.OpenAIError);
      return obs;
    }
    const message = final.choices?.[0]?.message;
    if (message) {
      history.push(message);
      (message.tool_calls ?? []).forEach((c, i) => history.push({ role: 'tool', tool_call_id: c.id, content: resultFor(step, i) }));
    }
    if (step.then_user !== null) history.push({ role: 'user', content: step.then_user });
    return observe(final);
  });
}

main().catch((err) => { process.stderr.write(`${err?.stack ?? err}\n`); process.exit(1); });
