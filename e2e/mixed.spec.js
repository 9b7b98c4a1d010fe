// One group, whatever each member picked (issue 36 item 1): four phones in one
// group on relay, relay-faithful, relay-udp and p2p each see the other three,
// exchange updates with all of them and measure RT; the p2p phone reaches the
// relayed ones through the relay (LINK). They share one scene: an object one
// adds, another moves and turns, and all four hold the same scene.
import { expect, test } from '@playwright/test';

import { openAr, unique } from './phones.js';

const TRANSPORTS = ['relay', 'relay-faithful', 'relay-udp', 'p2p'];

test('four phones on relay, relay-faithful, relay-udp and p2p in one group see each other, exchange updates and share one scene', async ({ browser, baseURL }, testInfo) => {
  test.setTimeout(90_000);
  const group = unique('mix');
  const phones = [];
  try {
    for (const [i, transport] of TRANSPORTS.entries()) {
      const name = ['Ann', 'Bob', 'Cy', 'Di'][i];
      phones.push({ name, transport, ...await openAr(browser, /** @type {string} */ (baseURL), `group=${group}&name=${name}&transport=${transport}&source=none&pose=${i * 0.1},0.1,0.5,0,0,0,1`) });
    }
    // every phone lists the other three, and receives updates from each of them
    for (const p of phones) {
      await expect.poll(() => p.page.evaluate(() => {
        const c = window.carlab.client;
        if (!c) return [];
        return [...c.members.values()].filter((m) => (c.streams.get(m.id)?.received ?? 0) > 3).map((m) => m.name).sort();
      }), { timeout: 30_000, message: `${p.name} (${p.transport}) hears the other three` }).toEqual(phones.filter((o) => o !== p).map((o) => o.name).sort());
    }
    // and measures RT: its updates complete, each waiting for all three
    for (const p of phones) {
      const s = await p.page.evaluate(() => {
        const st = /** @type {any} */ (window.carlab.client?.stats());
        return { rt: st.rt.length, sentTo: Object.keys(st.sentTo).length, completed: st.completed };
      });
      expect(s.rt, `${p.name} (${p.transport}) measured RT`).toBeGreaterThan(3);
      expect(s.sentTo, `${p.name} (${p.transport}) sent to all three`).toBe(3);
    }
    const p2p = /** @type {(typeof phones)[number]} */ (phones.find((p) => p.transport === 'p2p'));
    const paths = await p2p.page.evaluate(() => /** @type {any} */ (window.carlab.client?.transport.channelInfo())?.links.map((/** @type {any} */ l) => l.path));
    expect(paths, 'the p2p phone reaches the relayed ones through the relay').toEqual(['relay', 'relay', 'relay']);
    await expect(p2p.page.locator('[data-field="members"] .hud-member')).toHaveCount(3);

    // the scene: Di (p2p) adds a cube, Cy (relay-udp) moves and turns it, Ann removes the car
    const added = await p2p.page.evaluate(() => window.carlab.client?.addObject('cube', [0.05, 0, 0.02, 0, 0, 0, 1]).id);
    const cy = phones[2].page;
    await expect.poll(() => cy.evaluate((id) => window.carlab.sceneObjects().some((/** @type {any} */ o) => o.id === id), added), { timeout: 5_000 }).toBe(true);
    await cy.evaluate((id) => window.carlab.client?.moveSceneObject(/** @type {number} */ (id), [-0.04, 0, 0.03, 0, Math.SQRT1_2, 0, Math.SQRT1_2]), added);
    await phones[0].page.evaluate(() => window.carlab.client?.removeObject(0));
    for (const p of phones) {
      await expect.poll(() => p.page.evaluate(() => window.carlab.sceneSync()?.behind.length), { timeout: 10_000, message: `${p.name} in sync` }).toBe(0);
    }
    // others' moves glide through a playout and then settle where the record says (web/src/ar/scene.js)
    for (const p of phones) {
      await expect.poll(() => p.page.evaluate(() => window.carlab.sceneObjects().every((/** @type {any} */ o) => o.drawn.every((/** @type {number} */ v, /** @type {number} */ i) => Math.abs(v - o.pose[i]) < 1e-4))), {
        timeout: 5_000, message: `${p.name} draws every object where its record says`,
      }).toBe(true);
    }
    const scenes = await Promise.all(phones.map((p) => p.page.evaluate(() => ({
      digest: window.carlab.sceneSync()?.digest,
      objects: window.carlab.sceneObjects().map((/** @type {any} */ o) => ({ id: o.id, version: o.version, pose: o.pose, drawn: o.drawn.map((/** @type {number} */ v) => Math.round(v * 1e4) / 1e4) })),
    }))));
    for (const s of scenes) expect(s).toEqual(scenes[0]);
    expect(scenes[0].objects.map((/** @type {any} */ o) => [o.id, o.version])).toEqual([[added, 2]]);
    await expect(phones[3].page.locator('[data-field="scene"]')).toHaveText('1 object · in sync');
    await phones[1].page.screenshot({ path: testInfo.outputPath('mixed-hud.png') });
    for (const p of phones) expect(p.errors, `${p.name}: no page errors`).toEqual([]);
  } finally {
    for (const p of phones) await p.context.close();
  }
});
