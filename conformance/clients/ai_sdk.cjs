'use strict';
// What the two AI SDK drivers share: the task's history as AI SDK model messages, its tools
// (declared without `execute`, so a call ends the step as it does for a user who runs tools
// themselves), and one `streamText` call read the way a user reads it: `fullStream` for the live
// parts, `response.messages` appended to the history afterwards, as the AI SDK documents for
// multi-step conversations.
const { streamText, jsonSchema, tool, APICallError, AISDKError } = require('ai');
const { describeError, observation, resultFor } = require('./driverkit.cjs');

function parsed(text) {
  try { return text ? JSON.parse(text) : {}; } catch { return text; }
}

function modelMessages(task) {
  const out = task.system !== null ? [{ role: 'system', content: task.system }] : [];
  const names = {};
  for (const m of task.messages) {
    if (m.role === 'assistant') {
      const content = [];
      if (m.reasoning !== null) content.push({ type: 'reasoning', text: m.reasoning });
      if (m.content) content.push({ type: 'text', text: m.content });
      for (const c of m.tool_calls) {
        names[c.id] = c.name;
        content.push({ type: 'tool-call', toolCallId: c.id, toolName: c.name, input: parsed(c.arguments) });
      }
      out.push({ role: 'assistant', content });
    } else if (m.role === 'tool') {
      const part = { type: 'tool-result', toolCallId: m.tool_call_id, toolName: names[m.tool_call_id] ?? 'tool',
                     output: { type: m.is_error ? 'error-text' : 'text', value: m.content } };
      const last = out[out.length - 1];
      if (last && last.role === 'tool') last.content.push(part); else out.push({ role: 'tool', content: [part] });
    } else {
      out.push({ role: m.role, content: m.content });
    }
  }
  return out;
}

function tools(task) {
  const out = {};
  for (const t of task.tools) out[t.name] = tool({ description: t.description, inputSchema: jsonSchema(t.parameters) });
  return out;
}

function usage(u) {
  if (!u || u.inputTokens === undefined) return null;
  return { prompt_tokens: u.inputTokens, output_tokens: u.outputTokens ?? 0,
           cache_read_tokens: u.inputTokenDetails?.cacheReadTokens ?? null,
           reasoning_tokens: u.outputTokenDetails?.reasoningTokens ?? null };
}

function isOwn(err) {
  return APICallError.isInstance(err) || AISDKError.isInstance(err);
}

// One call: stream it, report what the parts said, extend `history` for the next call.
async function call({ model, task, history, step, settings }) {
  const obs = observation();
  const calls = [];
  const raw = {};
  let reasoning = null;
  let failure = null;
  const result = streamText({ model, messages: history, ...settings, ...(task.tools.length ? { tools: tools(task) } : {}),
                              onError: () => {} });
  try {
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta') obs.content += part.text;
      else if (part.type === 'reasoning-delta') reasoning = (reasoning ?? '') + part.text;
      else if (part.type === 'tool-input-delta') raw[part.id] = (raw[part.id] ?? '') + part.delta;
      else if (part.type === 'tool-call') calls.push(part);
      else if (part.type === 'error') failure = part.error;
      else if (part.type === 'finish') {
        obs.finish = part.finishReason ?? null;
        if (part.rawFinishReason !== undefined) obs.notes.push(`raw finish reason: ${part.rawFinishReason}`);
        obs.usage = usage(part.totalUsage);
      }
    }
  } catch (err) {
    failure = err;
  }
  obs.reasoning = reasoning;
  // The raw argument text is what the `tool-input-delta` parts streamed; a call that came
  // without them has only the parsed `input` the AI SDK keeps, written again as JSON.
  obs.tool_calls = calls.map((c) => ({ id: c.toolCallId ?? null, name: c.toolName ?? null,
    arguments: raw[c.toolCallId] ?? (typeof c.input === 'string' ? c.input : JSON.stringify(c.input)) }));
  const encoded = calls.filter((c) => raw[c.toolCallId] === undefined).length;
  if (encoded) obs.notes.push(`${encoded} tool call(s) came without input deltas: arguments re-encoded from the parsed input`);
  if (failure !== null) {
    obs.error = describeError(failure, 'ai', isOwn(failure));
    obs.finish = null;
    return obs;
  }
  const response = await result.response;
  history.push(...response.messages);
  if (calls.length) {
    history.push({ role: 'tool', content: calls.map((c, i) => ({ type: 'tool-result', toolCallId: c.toolCallId,
      toolName: c.toolName, output: { type: 'text', value: resultFor(step, i) } })) });
  }
  if (step.then_user !== null) history.push({ role: 'user', content: step.then_user });
  return obs;
}

// The settings every provider takes the same way.
function settings(task, opts) {
  const o = task.options;
  const s = {};
  if (o.max_tokens !== null) s.maxOutputTokens = o.max_tokens;
  if (o.temperature !== null) s.temperature = o.temperature;
  if (o.stop !== null) s.stopSequences = o.stop;
  if (o.tool_choice !== null) s.toolChoice = typeof o.tool_choice === 'string' ? o.tool_choice : { type: 'tool', toolName: o.tool_choice.name };
  if ('max_retries' in opts) s.maxRetries = Number(opts.max_retries);
  return s;
}

module.exports = { call, modelMessages, settings };
