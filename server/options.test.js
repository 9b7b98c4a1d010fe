import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { envNameFor, findIceServersProblem, parseStartOptions, startHelp } from './options.js';

/**
 * Parse with an empty environment unless one is given.
 *
 * @param {string[]} argv
 * @param {NodeJS.ProcessEnv} [env]
 * @param {(file: string) => string} [readFile]
 */
function parse(argv, env = {}, readFile) {
  return parseStartOptions(argv, readFile ? { env, readFile } : { env });
}

/**
 * Expect a usage error whose message matches `pattern`.
 *
 * @param {import('./options.js').ParseResult} result
 * @param {RegExp} pattern
 */
function assertUsageError(result, pattern) {
  assert.equal(result.kind, 'error', `expected an error, got ${JSON.stringify(result)}`);
  assert.equal(result.error.code, 'ERR_CARLAB_USAGE');
  assert.match(result.error.message, pattern);
}

describe('parseStartOptions: study flags refused', () => {
  test('a short or odd dashboard token, a report interval under the minimum, an empty record folder', () => {
    assertUsageError(parse(['--dashboard-token', 'short']), /--dashboard-token: expected 16\.\.128 characters/);
    assertUsageError(parse(['--dashboard-token', 'a'.repeat(16) + '<']), /--dashboard-token/);
    assertUsageError(parse(['--report-interval', '0.5']), /--report-interval: expected 0 or seconds 1\.\.3600, got '0.5'/);
    assertUsageError(parse(['--report-interval', 'often']), /--report-interval/);
    assertUsageError(parse(['--record', ' ']), /--record: expected a folder/);
  });
});

describe('parseStartOptions: good input', () => {
  test('defaults: HTTPS on 8443 on every interface', () => {
    const result = parse([]);
    assert.equal(result.kind, 'options');
    assert.deepEqual(result.options, {
      port: 8443,
      host: '0.0.0.0',
      http: false,
      cert: undefined,
      key: undefined,
      iceServers: [],
      peerjsPath: '/peerjs',
      peerjsKey: 'peerjs',
      relayPath: '/relay',
      maxPayload: undefined,
      queueSoftBytes: undefined,
      queueHardBytes: undefined,
      ackTimeoutMs: undefined,
      maxMessagesPerSecond: undefined,
      allowedOrigins: undefined,
      build: true,
      qr: true,
      banner: true,
      cluster: null,
      nats: null,
      record: null,
      dashboardToken: null,
      reportIntervalMs: 5000,
      logLevel: 'info',
      drainTimeoutMs: 5000,
      sceneStore: '.carlab/scenes',
      sceneTtlMs: 7 * 24 * 3600_000,
    });
  });

  test('study flags: --record, --dashboard-token, --report-interval, and their env twins', () => {
    const result = parse(['--record', 'study-a', '--dashboard-token', 'abcdefghijklmnop-123', '--report-interval', '2.5']);
    assert.equal(result.kind, 'options');
    assert.equal(result.options.record, 'study-a');
    assert.equal(result.options.dashboardToken, 'abcdefghijklmnop-123');
    assert.equal(result.options.reportIntervalMs, 2500);
    const fromEnv = parse([], { CARLAB_RECORD: '/tmp/s', CARLAB_DASHBOARD_TOKEN: 'x'.repeat(20), CARLAB_REPORT_INTERVAL: '0' });
    assert.equal(fromEnv.kind, 'options');
    assert.deepEqual([fromEnv.options.record, fromEnv.options.dashboardToken, fromEnv.options.reportIntervalMs], ['/tmp/s', 'x'.repeat(20), 0]);
  });

  test('--http switches the default port to 8080', () => {
    const result = parse(['--http']);
    assert.equal(result.kind, 'options');
    assert.equal(result.options.http, true);
    assert.equal(result.options.port, 8080);
  });

  test('every flag, in both --flag value and --flag=value forms', () => {
    const result = parse([
      '--port=0', '--host', '127.0.0.1', '--cert', 'c.pem', '--key=k.pem',
      '--ice-servers', '[{"urls":"stun:127.0.0.1:3478"}]',
      '--peerjs-path', '/signal/', '--peerjs-key', 'lab-key', '--relay-path', '/ws/relay',
      '--max-payload', '4096', '--queue-soft-bytes', '1000', '--queue-hard-bytes', '2000',
      '--ack-timeout-ms', '500', '--max-messages-per-second', '300', '--allowed-origins', 'https://a.test, http://b.test:8080',
      '--no-build', '--no-qr', '--no-banner', '--cluster=3', '--nats', 'nats://10.0.0.5:4222',
      '--log-level', 'DEBUG', '--drain-timeout=2.5',
      '--record', 'study', '--dashboard-token=0123456789abcdef', '--report-interval', '10',
      '--scene-store', 'kept', '--scene-ttl=1.5',
    ]);
    assert.equal(result.kind, 'options');
    assert.deepEqual(result.options, {
      port: 0,
      host: '127.0.0.1',
      http: false,
      cert: 'c.pem',
      key: 'k.pem',
      iceServers: [{ urls: 'stun:127.0.0.1:3478' }],
      peerjsPath: '/signal',
      peerjsKey: 'lab-key',
      relayPath: '/ws/relay',
      maxPayload: 4096,
      queueSoftBytes: 1000,
      queueHardBytes: 2000,
      ackTimeoutMs: 500,
      maxMessagesPerSecond: 300,
      allowedOrigins: ['https://a.test', 'http://b.test:8080'],
      build: false,
      qr: false,
      banner: false,
      cluster: 3,
      nats: 'nats://10.0.0.5:4222',
      record: 'study',
      dashboardToken: '0123456789abcdef',
      reportIntervalMs: 10000,
      logLevel: 'debug',
      drainTimeoutMs: 2500,
      sceneStore: 'kept',
      sceneTtlMs: 5_400_000,
    });
  });

  test('-h and --help ask for help, even beside other flags', () => {
    assert.deepEqual(parse(['-h']), { kind: 'help' });
    assert.deepEqual(parse(['--port', '1', '--help']), { kind: 'help' });
  });

  test('--allowed-origins accepts * for any origin', () => {
    const result = parse(['--allowed-origins', '*']);
    assert.equal(result.kind, 'options');
    assert.deepEqual(result.options.allowedOrigins, ['*']);
  });

  test('a bracketed IPv6 host is unwrapped for listen()', () => {
    const result = parse(['--host', '[::1]']);
    assert.equal(result.kind, 'options');
    assert.equal(result.options.host, '::1');
  });
});

describe('parseStartOptions: environment fallbacks', () => {
  test('CARLAB_* variables fill in missing flags', () => {
    const result = parse([], {
      CARLAB_PORT: '9000',
      CARLAB_HOST: '127.0.0.1',
      CARLAB_HTTP: 'true',
      CARLAB_ICE_SERVERS: '[{"urls":["turn:t.test:3478"],"username":"u","credential":"c"}]',
      CARLAB_PEERJS_KEY: 'k2',
      CARLAB_PEERJS_PATH: '/p',
      CARLAB_RELAY_PATH: '/r',
      CARLAB_MAX_PAYLOAD: '100',
      CARLAB_ACK_TIMEOUT_MS: '200',
      CARLAB_MAX_MESSAGES_PER_SECOND: '50',
      CARLAB_ALLOWED_ORIGINS: 'https://x.test',
      CARLAB_NO_BUILD: '1',
      CARLAB_NO_QR: 'yes',
    });
    assert.equal(result.kind, 'options');
    const { options } = result;
    assert.equal(options.port, 9000);
    assert.equal(options.host, '127.0.0.1');
    assert.equal(options.http, true);
    assert.deepEqual(options.iceServers, [{ urls: ['turn:t.test:3478'], username: 'u', credential: 'c' }]);
    assert.equal(options.peerjsKey, 'k2');
    assert.equal(options.peerjsPath, '/p');
    assert.equal(options.relayPath, '/r');
    assert.equal(options.maxPayload, 100);
    assert.equal(options.ackTimeoutMs, 200);
    assert.equal(options.maxMessagesPerSecond, 50);
    assert.deepEqual(options.allowedOrigins, ['https://x.test']);
    assert.equal(options.build, false);
    assert.equal(options.qr, false);
  });

  test('CARLAB_CERT and CARLAB_KEY', () => {
    const result = parse([], { CARLAB_CERT: 'a.pem', CARLAB_KEY: 'b.pem' });
    assert.equal(result.kind, 'options');
    assert.equal(result.options.cert, 'a.pem');
    assert.equal(result.options.key, 'b.pem');
  });

  test('flags win over the environment', () => {
    const result = parse(['--port', '1234'], { CARLAB_PORT: '9000' });
    assert.equal(result.kind, 'options');
    assert.equal(result.options.port, 1234);
  });

  test('empty variables count as unset; false-y booleans are false', () => {
    const result = parse([], { CARLAB_PORT: '', CARLAB_HTTP: '0', CARLAB_NO_QR: 'off' });
    assert.equal(result.kind, 'options');
    assert.equal(result.options.port, 8443);
    assert.equal(result.options.http, false);
    assert.equal(result.options.qr, true);
  });

  test('a bad variable is reported by its name', () => {
    assertUsageError(parse([], { CARLAB_PORT: 'eighty' }), /^CARLAB_PORT: must be an integer/);
    assertUsageError(parse([], { CARLAB_HTTP: 'maybe' }), /^CARLAB_HTTP: expected 1\/0/);
  });

  test('env names are derived from flag names', () => {
    assert.equal(envNameFor('queue-soft-bytes'), 'CARLAB_QUEUE_SOFT_BYTES');
    assert.equal(envNameFor('no-build'), 'CARLAB_NO_BUILD');
  });
});

describe('parseStartOptions: bad flags', () => {
  test('unknown flag', () => assertUsageError(parse(['--bogus']), /Unknown option '--bogus'/));
  test('unknown short flag', () => assertUsageError(parse(['-x']), /Unknown option '-x'/));
  test('positional argument', () => assertUsageError(parse(['now']), /Unexpected argument 'now'/));
  test('missing value', () => assertUsageError(parse(['--port']), /argument missing/));
  test('value given to a boolean', () => assertUsageError(parse(['--http=yes']), /does not take an argument/));
  test('messages are one line', () => {
    const result = parse(['--port', '--http']);
    assert.equal(result.kind, 'error');
    assert.doesNotMatch(result.error.message, /\n/);
  });
});

describe('parseStartOptions: bad values', () => {
  /** @type {[string[], RegExp][]} */
  const cases = [
    [['--port', '65536'], /^--port: must be an integer 0\.\.65535, got '65536'/],
    [['--port', '-1'], /--port/],
    [['--port', '80.5'], /^--port: must be an integer/],
    [['--host', ''], /^--host: not a host/],
    [['--host', 'a b'], /^--host: not a host/],
    [['--cert', 'c.pem'], /^--cert needs --key/],
    [['--key', 'k.pem'], /^--key needs --cert/],
    [['--http', '--cert', 'c', '--key', 'k'], /cannot be used with --http/],
    [['--max-payload', '0'], /^--max-payload: must be a positive integer, got '0'/],
    [['--max-payload', '12kb'], /^--max-payload: must be a positive integer/],
    [['--ack-timeout-ms', '1e3'], /^--ack-timeout-ms: must be a positive integer/],
    [['--log-level', 'loud'], /^--log-level: expected one of fatal, error, warn, info, debug, trace, silent, got 'loud'/],
    [['--drain-timeout=-1'], /^--drain-timeout: expected seconds 0\.\.3600, got '-1'/],
    [['--drain-timeout', '5s'], /^--drain-timeout: expected seconds/],
    [['--scene-ttl', '0'], /^--scene-ttl: expected hours above 0, at most 8760, got '0'/],
    [['--scene-ttl', '2d'], /^--scene-ttl: expected hours/],
    [['--scene-store', ''], /^--scene-store: expected a folder, got ''/],
    [['--no-scene-store', '--scene-store', 'x'], /^--no-scene-store cannot be used with --scene-store/],
    [['--max-messages-per-second', '0'], /^--max-messages-per-second: must be a positive integer, got '0'/],
    [['--max-messages-per-second', 'lots'], /^--max-messages-per-second: must be a positive integer/],
    [['--queue-soft-bytes', '10', '--queue-hard-bytes', '5'], /--queue-soft-bytes \(10\) must not exceed --queue-hard-bytes \(5\)/],
    [['--relay-path', 'relay'], /^--relay-path: must be a path like \/name/],
    [['--relay-path', '/'], /^--relay-path: must be a path/],
    [['--relay-path', '/a/../b'], /^--relay-path: must be a path/],
    [['--relay-path', '/r?x=1'], /^--relay-path: must be a path/],
    [['--peerjs-path', '/same', '--relay-path', '/same'], /must not overlap/],
    [['--peerjs-path', '/p', '--relay-path', '/p/relay'], /must not overlap/],
    [['--relay-path', '/healthz'], /clashes with the server's own \/healthz/],
    [['--peerjs-key', 'a/b'], /^--peerjs-key: must be letters/],
    [['--allowed-origins', ','], /^--allowed-origins: expected a comma-separated list/],
    [['--allowed-origins', 'https://a.test/'], /'https:\/\/a\.test\/' is not an origin/],
    [['--allowed-origins', 'a.test'], /'a\.test' is not an origin/],
  ];
  for (const [argv, pattern] of cases) {
    test(argv.join(' '), () => assertUsageError(parse(argv), pattern));
  }
});

describe('--ice-servers', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'carlab-options-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('inline JSON', () => {
    const result = parse(['--ice-servers', ' [{"urls":["stun:a.test","turns:b.test:443"]}]']);
    assert.equal(result.kind, 'options');
    assert.deepEqual(result.options.iceServers, [{ urls: ['stun:a.test', 'turns:b.test:443'] }]);
  });

  test('a JSON file, read through the real file system', () => {
    const file = path.join(dir, 'ice.json');
    writeFileSync(file, JSON.stringify([{ urls: 'turn:t.test:3478', username: 'u', credential: 'secret' }]));
    const result = parseStartOptions(['--ice-servers', file], { env: {} });
    assert.equal(result.kind, 'options');
    assert.deepEqual(result.options.iceServers, [{ urls: 'turn:t.test:3478', username: 'u', credential: 'secret' }]);
  });

  test('an empty array is allowed', () => {
    const result = parse(['--ice-servers', '[]']);
    assert.equal(result.kind, 'options');
    assert.deepEqual(result.options.iceServers, []);
  });

  test('a missing file', () => {
    assertUsageError(parseStartOptions(['--ice-servers', path.join(dir, 'nope.json')], { env: {} }),
      /^--ice-servers: cannot read ICE servers file '.*nope\.json': ENOENT/);
  });

  test('a file that is not JSON does not echo its content', () => {
    const file = path.join(dir, 'bad.json');
    writeFileSync(file, '[{"urls":"turn:x", "credential": "hunter2"');
    const result = parseStartOptions(['--ice-servers', file], { env: {} });
    assertUsageError(result, /is not valid JSON$/);
    if (result.kind === 'error') assert.doesNotMatch(result.error.message, /hunter2/);
  });

  test('inline text that is not JSON', () => {
    assertUsageError(parse(['--ice-servers', '[{urls}]']), /^--ice-servers: not valid JSON/);
  });

  test('the reader is injectable', () => {
    const result = parse(['--ice-servers', 'virtual.json'], {}, (/** @type {string} */ file) => {
      assert.equal(file, 'virtual.json');
      return '[{"urls":"stun:v.test"}]';
    });
    assert.equal(result.kind, 'options');
    assert.deepEqual(result.options.iceServers, [{ urls: 'stun:v.test' }]);
  });

  /** @type {[unknown, RegExp][]} */
  const badShapes = [
    [{ urls: 'stun:a' }, /expected a JSON array/],
    [[null], /ICE server \[0\] must be an object/],
    [[['stun:a']], /ICE server \[0\] must be an object/],
    [[{}], /\[0\]\.urls must be a string or a non-empty array of strings/],
    [[{ urls: [] }], /\[0\]\.urls must be/],
    [[{ urls: [1] }], /\[0\]\.urls must be/],
    [[{ urls: 'stun:a' }, { urls: 'http://a' }], /\[1\]\.urls: 'http:\/\/a' is not a stun:/],
    [[{ urls: 'turn:a', username: 1 }], /\[0\]\.username must be a string/],
    [[{ urls: 'turn:a', credential: {} }], /\[0\]\.credential must be a string/],
  ];
  for (const [value, pattern] of badShapes) {
    test(`shape ${JSON.stringify(value)}`, () => {
      assert.match(findIceServersProblem(value) ?? '', pattern);
      if (Array.isArray(value)) assertUsageError(parse(['--ice-servers', JSON.stringify(value)]), pattern);
    });
  }

  test('good shapes have no problem', () => {
    assert.equal(findIceServersProblem([{ urls: 'stun:a' }, { urls: ['turn:b?transport=tcp'], username: 'u', credential: 'c' }]), null);
  });
});

test('help lists every flag with its environment variable', () => {
  const help = startHelp();
  assert.match(help, /^Usage: carlab start \[options\]/);
  for (const flag of ['--port', '--host', '--http', '--cert', '--key', '--ice-servers', '--peerjs-path', '--peerjs-key',
    '--relay-path', '--max-payload', '--queue-soft-bytes', '--queue-hard-bytes', '--ack-timeout-ms',
    '--max-messages-per-second', '--allowed-origins', '--no-build', '--no-qr', '-h, --help']) {
    assert.ok(help.includes(flag), `help mentions ${flag}`);
  }
  assert.match(help, /\[CARLAB_QUEUE_HARD_BYTES\]/);
});
