import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ProfileError, describeProfile, loadProfiles, needsLoss, needsNetem, needsRate, normalizeProfile, parseMs, parseProfiles, parseRate, selectProfiles,
} from './profiles.js';

test('rates, durations and loss parse in their units', () => {
  assert.equal(parseRate('256kbit', 'x'), 256);
  assert.equal(parseRate('21mbit', 'x'), 21000);
  assert.equal(parseRate('1Gbit', 'x'), 1e6);
  assert.equal(parseRate(64, 'x'), 64);
  assert.throws(() => parseRate('fast', 'p rate'), /p rate: rate "fast"/);
  assert.throws(() => parseRate('0kbit', 'x'), ProfileError);
  assert.equal(parseMs('40ms', 'x'), 40);
  assert.equal(parseMs('1.5s', 'x'), 1500);
  assert.throws(() => parseMs('soon', 'x'), ProfileError);
});

test('one value means both directions; {up, down} sets each', () => {
  const p = normalizeProfile('hspa', { rate: { up: '5760kbit', down: '21mbit' }, loss: 1 });
  assert.deepEqual(p.up, { lossPct: 1, rateKbit: 5760, delayMs: null, jitterMs: null, queueMs: 200 });
  assert.equal(p.down.rateKbit, 21000);
  assert.equal(needsRate(p), true);
  assert.equal(needsLoss(p), true);
  assert.equal(needsNetem(p), false);
  assert.match(describeProfile(p), /loss 1 %, rate 5760 kbit\/s up\/21000 kbit\/s down per peer/);
});

test('bad profiles are refused with the field named', () => {
  assert.throws(() => normalizeProfile('x', { los: 1 }), /unknown field "los"/);
  assert.throws(() => normalizeProfile('x', { loss: 100 }), /loss "100"/);
  assert.throws(() => normalizeProfile('x', { loss: -1 }), ProfileError);
  assert.throws(() => normalizeProfile('x', { jitter: '5ms' }), /jitter up needs a delay up/);
  assert.throws(() => normalizeProfile('x', { rate: { upp: '1mbit' } }), /unknown direction "upp"/);
  assert.throws(() => normalizeProfile('bad name', {}), /profile name/);
  assert.throws(() => parseProfiles('{', 'f.json'), /f.json: not JSON/);
  assert.throws(() => parseProfiles('{"x": 1}', 'f.json'), /needs \{ "profiles"/);
  assert.throws(() => parseProfiles('{"profiles": {"a": {"rate": "x"}}}', 'f.json'), /f.json: profile "a" rate/);
});

test('the built-in file has the issue\'s profiles and one that needs netem', async () => {
  const all = await loadProfiles();
  for (const name of ['none', 'lossy-1', 'lossy-2', 'lossy-5', 'lossy-10', '3g', 'hspa', 'internet']) assert.ok(all.has(name), name);
  assert.equal(all.get('lossy-5')?.down.lossPct, 5);
  assert.equal(all.get('3g')?.up.rateKbit, 256);
  assert.equal(all.get('hspa')?.down.rateKbit, 21000);
  assert.equal(needsNetem(/** @type {any} */ (all.get('internet'))), true);
  assert.equal(describeProfile(/** @type {any} */ (all.get('none'))), 'unshaped');
  assert.deepEqual(selectProfiles('lossy-1, 3g', all).map((p) => p.name), ['lossy-1', '3g']);
  assert.throws(() => selectProfiles('wifi', all), /unknown profile "wifi".*--net-file/);
  assert.throws(() => selectProfiles(' , ', all), /empty list/);
});

test('--net-file adds profiles and overrides built-in ones', async (t) => {
  const { mkdtemp, writeFile, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const dir = await mkdtemp(`${tmpdir()}/carlab-net-`);
  t.after(() => rm(dir, { recursive: true, force: true }));
  const file = `${dir}/mine.json`;
  await writeFile(file, JSON.stringify({ profiles: { edge: { rate: '200kbit', loss: { down: 3 } }, '3g': { rate: '384kbit' } } }));
  const all = await loadProfiles(file);
  assert.equal(all.get('edge')?.down.lossPct, 3);
  assert.equal(all.get('edge')?.up.lossPct, 0);
  assert.equal(all.get('3g')?.up.rateKbit, 384);
  await assert.rejects(loadProfiles(`${dir}/missing.json`), /--net-file: cannot read/);
});
