// The steps parseStartOptions is made of, each on its own.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  UsageError, checkStartOptions, createOptionSource, parseFlagValues, readStartOptions,
} from './options.js';

/** @param {string} file */
const noFile = (file) => { throw new Error(`unexpected read of ${file}`); };

/**
 * The options readStartOptions gives for `argv` and `env`.
 *
 * @param {string[]} argv
 * @param {NodeJS.ProcessEnv} [env]
 */
const read = (argv, env = {}) => readStartOptions(createOptionSource(parseFlagValues(argv), env), noFile);

describe('parseFlagValues', () => {
  test('returns the flags by name', () => {
    const values = parseFlagValues(['--port', '9', '--http', '-h']);
    assert.equal(values.port, '9');
    assert.equal(values.http, true);
    assert.equal(values.help, true);
    assert.equal(values.host, undefined);
  });

  test('an unknown flag, a missing value or a positional is a UsageError of one line', () => {
    for (const argv of [['--bogus'], ['--port'], ['extra']]) {
      assert.throws(() => parseFlagValues(argv), (err) => {
        assert.ok(err instanceof UsageError, String(err));
        assert.equal(err.code, 'ERR_CARLAB_USAGE');
        assert.doesNotMatch(err.message, /\n/);
        return true;
      });
    }
  });
});

describe('createOptionSource', () => {
  test('a flag wins over its variable and is labelled as the flag', () => {
    const source = createOptionSource({ port: '1' }, { CARLAB_PORT: '2' });
    assert.deepEqual(source.stringOf('port'), { raw: '1', label: '--port' });
  });

  test('else the variable, labelled by its name; empty counts as unset', () => {
    const source = createOptionSource({}, { CARLAB_QUEUE_SOFT_BYTES: '5', CARLAB_HOST: '' });
    assert.deepEqual(source.stringOf('queue-soft-bytes'), { raw: '5', label: 'CARLAB_QUEUE_SOFT_BYTES' });
    assert.deepEqual(source.stringOf('host'), { raw: undefined, label: 'CARLAB_HOST' });
  });

  test('booleans: the flag, else the variable in any usual spelling; nonsense is a UsageError', () => {
    assert.equal(createOptionSource({ http: true }, { CARLAB_HTTP: 'no' }).booleanOf('http'), true);
    assert.equal(createOptionSource({}, { CARLAB_HTTP: ' Yes ' }).booleanOf('http'), true);
    assert.equal(createOptionSource({}, { CARLAB_HTTP: 'off' }).booleanOf('http'), false);
    assert.equal(createOptionSource({}, {}).booleanOf('http'), false);
    assert.throws(() => createOptionSource({}, { CARLAB_HTTP: 'maybe' }).booleanOf('http'), /^UsageError: CARLAB_HTTP: expected 1\/0/);
  });
});

describe('readStartOptions', () => {
  test('defaults', () => {
    assert.deepEqual(read([]), {
      port: 8443, host: '0.0.0.0', http: false, cert: undefined, key: undefined, iceServers: [],
      peerjsPath: '/peerjs', peerjsKey: 'peerjs', relayPath: '/relay',
      maxPayload: undefined, queueSoftBytes: undefined, queueHardBytes: undefined, ackTimeoutMs: undefined,
      maxMessagesPerSecond: undefined, allowedOrigins: undefined, build: true, qr: true, banner: true, cluster: null, nats: null,
      record: null, dashboardToken: null, reportIntervalMs: 5000,
      logLevel: 'info', drainTimeoutMs: 5000, sceneStore: '.carlab/scenes', sceneTtlMs: 7 * 24 * 3600_000,
    });
    assert.equal(read(['--http']).port, 8080);
    assert.equal(read(['--no-scene-store']).sceneStore, null, 'scenes not kept');
  });

  test('a half cert/key pair is reported before any bad field', () => {
    assert.throws(() => read(['--cert', 'c.pem', '--port', 'x']), /^UsageError: --cert needs --key as well$/);
    assert.throws(() => read(['--port', 'x'], { CARLAB_KEY: 'k.pem' }), /^UsageError: --key needs --cert as well$/);
    assert.throws(() => read(['--http', '--cert', 'c', '--key', 'k']), /cannot be used with --http/);
  });

  test('each field is read through its own parser, named as given', () => {
    assert.throws(() => read([], { CARLAB_PORT: '70000' }), /^UsageError: CARLAB_PORT: must be an integer 0\.\.65535/);
    assert.equal(read(['--host', '[::1]']).host, '::1');
    assert.equal(read(['--relay-path', '/r/']).relayPath, '/r');
    assert.equal(read(['--max-payload', '10']).maxPayload, 10);
    assert.deepEqual(read(['--allowed-origins', 'https://a.test, *']).allowedOrigins, ['https://a.test', '*']);
    assert.equal(read(['--no-build', '--no-qr']).build, false);
    assert.equal(read([], { CARLAB_NO_QR: '1' }).qr, false);
  });

  test('an --ice-servers file goes through the reader given', () => {
    const options = readStartOptions(createOptionSource({ 'ice-servers': 'ice.json' }, {}), (file) => {
      assert.equal(file, 'ice.json');
      return '[{"urls":"stun:s.test"}]';
    });
    assert.deepEqual(options.iceServers, [{ urls: 'stun:s.test' }]);
  });

  test('settings are not checked against each other here', () => {
    assert.doesNotThrow(() => read(['--queue-soft-bytes', '9', '--queue-hard-bytes', '1']));
    assert.doesNotThrow(() => read(['--relay-path', '/peerjs']));
  });
});

describe('checkStartOptions', () => {
  /**
   * @param {string[]} argv
   * @param {NodeJS.ProcessEnv} [env]
   */
  const check = (argv, env = {}) => {
    const source = createOptionSource(parseFlagValues(argv), env);
    checkStartOptions(readStartOptions(source, noFile), source);
  };

  test('good settings pass', () => {
    assert.doesNotThrow(() => check(['--queue-soft-bytes', '1', '--queue-hard-bytes', '1', '--relay-path', '/a', '--peerjs-path', '/b']));
  });

  test('a soft queue above the hard one, named as each was given', () => {
    assert.throws(() => check(['--queue-hard-bytes', '5'], { CARLAB_QUEUE_SOFT_BYTES: '6' }),
      /^UsageError: CARLAB_QUEUE_SOFT_BYTES \(6\) must not exceed --queue-hard-bytes \(5\)$/);
  });

  test('the relay and PeerJS paths must not overlap', () => {
    assert.throws(() => check(['--relay-path', '/peerjs/x']), /the relay path \/peerjs\/x and the PeerJS path \/peerjs must not overlap/);
  });

  test('neither may take one of the server\'s own paths', () => {
    assert.throws(() => check(['--relay-path', '/metrics']), /^UsageError: --relay-path: \/metrics clashes with the server's own \/metrics$/);
    assert.throws(() => check([], { CARLAB_PEERJS_PATH: '/assets/p' }), /^UsageError: CARLAB_PEERJS_PATH: \/assets\/p clashes with the server's own \/assets$/);
    assert.throws(() => check(['--peerjs-path', '/config.json']), /clashes with the server's own \/config\.json/);
  });
});
