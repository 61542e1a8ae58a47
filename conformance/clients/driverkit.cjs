'use strict';
// The client protocol's plumbing for the Node drivers beside this file (Node's standard library
// only): protocol lines go to file descriptor 1 with synchronous writes, console.log and
// console.info are pointed at stderr (a library that logs would corrupt the protocol), the task
// is read from stdin, and an error is described the way the observation schema wants.
// docs/client_protocol.md is the protocol itself.
const fs = require('node:fs');
const path = require('node:path');

const PROTOCOL_VERSION = 1;
console.log = console.error;
console.info = console.error;

function packageVersion(name) {
  // Many packages do not export their package.json: walk up from their entry point instead.
  let dir = path.dirname(require.resolve(name));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const meta = JSON.parse(fs.readFileSync(file, 'utf8'));
      if (meta.name === name) return meta.version;
    }
    const up = path.dirname(dir);
    if (up === dir) return 'unknown';
    dir = up;
  }
}

function print(obj) {
  fs.writeSync(1, JSON.stringify(obj) + '\n');
}

function observation() {
  return { content: '', reasoning: null, tool_calls: [], finish: null, usage: null, error: null, retries: null, notes: [] };
}

function str(v) {
  return v === undefined || v === null || typeof v === 'string' || typeof v === 'number' ? (v ?? null) : String(v);
}

// The observation's `error`: class, message, HTTP status and provider error object where the
// library attached them, and whether it is one of the library's own types (`own`).
function describeError(err, library, own) {
  if (!(err instanceof Error)) {
    // A library that hands over a plain value (an error event's payload, say) as its error.
    const value = err && typeof err === 'object' ? err : { message: String(err) };
    const inner = value.error && typeof value.error === 'object' ? value.error : value;
    const provider = {};
    for (const k of ['type', 'code', 'message', 'param']) if (k in inner) provider[k] = str(inner[k]);
    return { class: `node.${value.constructor?.name ?? typeof err}`, message: JSON.stringify(err) ?? String(err),
             status: null, own: false, provider: Object.keys(provider).length ? provider : null };
  }
  const e = err;
  // A retrying library's error keeps the last attempt's (the AI SDK's RetryError.lastError).
  const last = e.lastError && typeof e.lastError === 'object' ? e.lastError : e;
  const status = [last.status, last.statusCode].find((s) => Number.isInteger(s)) ?? null;
  let body = last.error ?? last.data ?? null;
  if (body === null && typeof last.responseBody === 'string') {
    try { body = JSON.parse(last.responseBody); } catch { body = null; }
  }
  if (body && typeof body === 'object' && body.error && typeof body.error === 'object') body = body.error;
  let provider = null;
  if (body && typeof body === 'object') {
    provider = {};
    for (const k of ['type', 'code', 'message', 'param']) if (k in body) provider[k] = str(body[k]);
  }
  return { class: `${own ? library : 'node'}.${e.constructor?.name ?? 'Error'}`, message: String(e.message ?? e),
           status, own: Boolean(own), provider };
}

function resultFor(step, k) {
  const results = step.tool_results || [];
  return k < results.length ? String(results[k]) : 'ok';
}

class Driver {
  constructor({ client, protocols, packages, options = {}, tries = [], unsupported = [], known = {} }) {
    this.task = JSON.parse(fs.readFileSync(0, 'utf8'));
    Object.assign(this, { client, protocols, packages, optionsDoc: options, tries, unsupported, known });
  }

  // Print `hello`; false when the task only asked for it.
  hello() {
    const libraries = {};
    for (const p of this.packages) libraries[p] = packageVersion(p);
    print({ type: 'hello', protocol_version: PROTOCOL_VERSION, client: this.client, protocols: this.protocols,
            libraries, runtime: `node ${process.versions.node}`, options: this.optionsDoc, tries: this.tries,
            unsupported: [...new Set(this.unsupported)].sort(), known: this.known });
    return !this.task.describe;
  }

  // The task's client options; an undocumented one ends the run with status 2.
  options() {
    const given = this.task.client_options || {};
    const unknown = Object.keys(given).filter((k) => !(k in this.optionsDoc));
    if (unknown.length) {
      process.stderr.write(`${this.client}: unknown client option(s) ${unknown.join(', ')}\n`);
      process.exit(2);
    }
    return given;
  }

  // Make each step's call in order, print its observation, stop after an error.
  async play(call) {
    const steps = this.task.steps;
    for (let k = 0; k < steps.length; k++) {
      const obs = await call(k, steps[k]);
      print({ type: 'observation', step: k, ...obs });
      if (obs.error !== null) return;
    }
  }
}

module.exports = { Driver, describeError, observation, resultFor };
