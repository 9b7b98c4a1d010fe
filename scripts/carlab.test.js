import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';

import { COMMANDS, dispatch, overallHelp } from './carlab.js';

const BIN = fileURLToPath(new URL('./carlab.js', import.meta.url));

/** A writable that keeps what it was given. */
function capture() {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      text += chunk;
      callback();
    },
  });
  return { stream, text: () => text };
}

/** Run dispatch with captured output. @param {string[]} argv */
async function run(argv) {
  const stdout = capture();
  const stderr = capture();
  const code = await dispatch(argv, { stdout: stdout.stream, stderr: stderr.stream, env: {} });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

describe('dispatch', () => {
  test('--help, -h and help print the overall help and succeed', async () => {
    for (const argv of [['--help'], ['-h'], ['help']]) {
      const result = await run(argv);
      assert.equal(result.code, 0, argv.join(' '));
      assert.equal(result.stdout, overallHelp());
      assert.equal(result.stderr, '');
    }
  });

  test('the help lists every command and marks the unavailable ones', () => {
    const help = overallHelp();
    for (const name of ['start', 'bench', 'sim', 'browsers', 'report', 'markers', 'video']) {
      assert.match(help, new RegExp(`^  ${name} `, 'm'));
    }
    for (const [name, command] of Object.entries(COMMANDS)) {
      const line = help.split('\n').find((l) => l.startsWith(`  ${name} `)) ?? '';
      if (command.load) assert.doesNotMatch(line, /not available/, name);
      else assert.match(line, /\(not available yet\)/, name);
    }
  });

  test('no command exits 2 with the help on stderr', async () => {
    const result = await run([]);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^carlab: missing command\n\nUsage: carlab/);
    assert.equal(result.stdout, '');
  });

  test('an unknown command exits 2', async () => {
    const result = await run(['frobnicate']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^carlab: unknown command 'frobnicate'/);
    // Inherited object keys are not commands.
    assert.equal((await run(['toString'])).code, 2);
  });

  test('a command not available yet exits 2', async (t) => {
    const unavailable = Object.keys(COMMANDS).filter((name) => !COMMANDS[name].load);
    if (unavailable.length === 0) t.skip('every command is available');
    for (const name of unavailable) {
      const result = await run([name]);
      assert.equal(result.code, 2);
      assert.match(result.stderr, new RegExp(`^carlab: '${name}' is not available yet`));
    }
  });

  test('start --help prints the start help', async () => {
    const result = await run(['start', '--help']);
    assert.equal(result.code, 0);
    assert.match(result.stdout, /^Usage: carlab start \[options\]/);
    assert.deepEqual(await run(['help', 'start']), result);
  });

  test('start with a bad flag exits 2 with the reason and the help on stderr', async () => {
    const result = await run(['start', '--port', 'x']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^carlab start: --port: must be an integer 0\.\.65535, got 'x'\n\nUsage: carlab start/);
    assert.equal(result.stdout, '');
  });
});

describe('the carlab bin', () => {
  test('is executable with a node shebang', () => {
    accessSync(BIN, constants.X_OK);
    assert.match(readFileSync(BIN, 'utf8'), /^#!\/usr\/bin\/env node\n/);
  });

  test('exits 2 on a bad start flag', async () => {
    const child = spawn(process.execPath, [BIN, 'start', '--bogus'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    const [code] = await new Promise((resolve) => child.once('exit', (...args) => resolve(args)));
    assert.equal(code, 2);
    assert.match(stderr, /^carlab start: Unknown option '--bogus'/);
  });

  test('start serves until SIGTERM, then closes and exits 0', { timeout: 30_000 }, async () => {
    const child = spawn(process.execPath, [BIN, 'start', '--http', '--port', '0', '--host', '127.0.0.1', '--no-build', '--no-qr', '--no-scene-store'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CARLAB_PORT: '', CARLAB_HTTP: '' },
    });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    try {
      const url = await new Promise((resolve, reject) => {
        child.stdout.on('data', (chunk) => {
          stdout += chunk;
          const match = /local: +(http:\/\/127\.0\.0\.1:\d+\/)/.exec(stdout);
          if (match) resolve(match[1]);
        });
        child.once('exit', () => reject(new Error(`exited early: ${stderr}`)));
      });
      const health = await (await fetch(new URL('/healthz', url))).json();
      assert.equal(health.status, 'ok');
      assert.match(stdout, /Ctrl\+C/);

      child.kill('SIGTERM');
      assert.deepEqual(await exited, { code: 0, signal: null });
      assert.match(stdout, /SIGTERM, closing/);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
