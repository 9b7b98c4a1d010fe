import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { Matrix4, Object3D, Quaternion, Vector3 } from 'three';

import { idealCamera } from './camera-model.js';
import { DEFAULT_PLAYOUT } from '../../../core/playout.js';
import { ArScene, Avatar, buildSceneGraph, isUntracked, memberColour, NEAR_AVATAR_M } from './scene.js';

/** @typedef {import('../../../core/protocol.js').Pose} Pose */

const close = (/** @type {number} */ a, /** @type {number} */ b, eps = 1e-9) => assert.ok(Math.abs(a - b) < eps, `${a} != ${b}`);

describe('pure helpers', () => {
  test('the identity at the marker centre (or nothing) means "not tracking"', () => {
    assert.equal(isUntracked(null), true);
    assert.equal(isUntracked([0, 0, 0, 0, 0, 0, 1]), true);
    assert.equal(isUntracked([0, 0.3, 0, 0, 0, 0, 1]), false);
    assert.equal(isUntracked([0, 0, 0, 0, 1, 0, 0]), false);
  });

  test('member colours are stable, distinct hues', () => {
    assert.equal(memberColour(1), memberColour(1));
    assert.equal(memberColour(0), 'hsl(0, 80%, 55%)');
    const hues = new Set(Array.from({ length: 8 }, (_, i) => memberColour(i + 1)));
    assert.equal(hues.size, 8);
  });
});

describe('the scene graph', () => {
  const size = 0.16;
  const graph = buildSceneGraph(size);

  test('markerRoot waits, hidden, for AR.js to set its matrix', () => {
    assert.equal(graph.markerRoot.visible, false);
    assert.equal(graph.markerRoot.matrixAutoUpdate, false);
    assert.equal(graph.markerRoot.parent, graph.scene);
    assert.equal(graph.camera.parent, graph.scene);
  });

  test('content is in metres under markerRoot (marker sides) and holds the ring and the object', () => {
    assert.equal(graph.content.parent, graph.markerRoot);
    assert.equal(graph.object.parent, graph.content);
    assert.equal(graph.ring.parent, graph.content);
    graph.markerRoot.matrix.makeTranslation(2, 0, 0);
    graph.scene.updateMatrixWorld(true);
    // one marker side (0.16 m) along x in content is one unit in markerRoot
    const p = graph.content.localToWorld(new Vector3(size, 0, 0));
    close(p.x, 3);
    close(p.y, 0);
  });

  test('the ring lies flat around the marker, the object stands on it', () => {
    const ring = /** @type {{ geometry: { parameters: { innerRadius: number, outerRadius: number } }, rotation: { x: number } }} */ (graph.ring);
    close(ring.geometry.parameters.innerRadius, size * 0.72);
    close(ring.geometry.parameters.outerRadius, size * 0.76);
    close(ring.rotation.x, -Math.PI / 2);
    assert.ok(graph.object.children.length >= 7, 'body, cabin, roof, four wheels, lamps');
    assert.deepEqual(graph.object.position.toArray(), [0, 0, 0]);
  });
});

describe('avatars', () => {
  const avatar = () => new Avatar('Ann', memberColour(3), 0.16, new Object3D());

  test('hidden until a tracked pose, then jump to it', () => {
    const a = avatar();
    assert.equal(a.group.visible, false);
    a.setTarget([0, 0, 0, 0, 0, 0, 1]);
    assert.equal(a.group.visible, false);
    assert.equal(a.hasPose, false);
    a.setTarget([0.1, 0.2, 0.3, 0, 0, 0, 2]);
    assert.equal(a.group.visible, true);
    assert.equal(a.hasPose, true);
    assert.deepEqual(a.group.position.toArray(), [0.1, 0.2, 0.3]);
    close(a.group.quaternion.w, 1, 1e-12);
  });

  test('drawn through its playout: eased towards each new pose, and still once there', () => {
    const a = new Avatar('Ann', memberColour(3), 0.16, new Object3D(), 'ease');
    a.setTarget([0, 0.2, 0, 0, 0, 0, 1], { seq: 1, sendTime: 0, arrival: 0 });
    assert.equal(a.draw(0), false, 'placed at its first pose');
    a.setTarget([0.4, 0.2, 0, 0, 0, 0, 1], { seq: 2, sendTime: 167, arrival: 50 });
    assert.equal(a.draw(90), true, 'one time constant later');
    close(a.group.position.x, 0.4 * (1 - Math.exp(-1)), 1e-9);
    for (let t = 300; t < 3000; t += 16) a.draw(t);
    close(a.group.position.x, 0.4, 1e-6);
    assert.equal(a.draw(3016), false, 'arrived');
    a.setTarget([0, 0, 0, 0, 0, 0, 1]);
    assert.equal(a.group.visible, false, 'stopped tracking');
    assert.equal(a.draw(3032), false);
  });

  test('by default its motion is predicted between updates', () => {
    const a = avatar();
    assert.equal(a.playout.mode, DEFAULT_PLAYOUT);
    for (let seq = 0; seq < 4; seq++) a.setTarget([seq * 0.1, 0.2, 0, 0, 0, 0, 1], { seq, sendTime: seq * 100, arrival: seq * 100 + 5 });
    a.draw(300 + 5);
    a.draw(350 + 5);
    close(a.group.position.x, 0.35, 1e-6);
    assert.equal(a.behindMs(), 0);
  });

  test('rotate towards the new orientation', () => {
    const a = new Avatar('Ann', memberColour(3), 0.16, new Object3D(), 'ease');
    a.setTarget([0, 0.2, 0, 0, 0, 0, 1], { seq: 1, sendTime: 0, arrival: 0 });
    a.draw(0);
    const q = new Quaternion().setFromAxisAngle(new Vector3(0, 1, 0), 1);
    a.setTarget([0, 0.2, 0, q.x, q.y, q.z, q.w], { seq: 2, sendTime: 100, arrival: 100 });
    a.draw(90 * Math.LN2); // half the way in one half-life after the last frame
    close(a.group.quaternion.angleTo(q), 0.5, 1e-6);
  });

  test('dispose frees the geometries and materials', () => {
    const a = avatar();
    let freed = 0;
    a.group.traverse((/** @type {any} */ o) => {
      if (o.geometry) o.geometry.addEventListener('dispose', () => freed++);
    });
    a.dispose();
    assert.ok(freed >= 3, `${freed} geometries freed`);
  });
});

/**
 * A canvas without WebGL: enough for the pointer handlers and the layout.
 * @param {number} width @param {number} height
 */
function fakeCanvas(width, height) {
  return Object.assign(new EventTarget(), {
    style: {},
    clientWidth: width,
    clientHeight: height,
    getContext: () => null,
    getBoundingClientRect: () => ({ left: 0, top: 0, width, height }),
    setPointerCapture() {},
    releasePointerCapture() {},
  });
}

/**
 * An ArScene on a fake canvas, seen from `height` marker sides straight above the marker centre.
 * @param {import('node:test').TestContext} t
 */
function sceneFromAbove(t, height = 4) {
  const canvas = fakeCanvas(640, 480);
  t.mock.method(console, 'error', () => {}); // three.js says it has no WebGL context
  const scene = new ArScene(/** @type {any} */ (canvas), { markerSize: 0.16, pixelRatio: 1 });
  scene.setCamera(idealCamera(640, 480), 640, 480);
  // the camera above the marker, looking down (-z), screen up = marker -z
  const cameraInMarker = new Matrix4().lookAt(new Vector3(0, height, 0), new Vector3(0, 0, 0), new Vector3(0, 0, -1))
    .setPosition(0, height, 0);
  scene.markerRoot.matrix.copy(cameraInMarker.invert());
  scene.markerRoot.visible = true;
  return { scene, canvas };
}

/**
 * @param {EventTarget} target @param {string} type @param {{ x: number, y: number } | null} at
 */
function pointer(target, type, at, pointerId = 1) {
  assert.ok(at);
  target.dispatchEvent(Object.assign(new Event(type, { cancelable: true }), { clientX: at.x, clientY: at.y, pointerId }));
}

/** @param {number} id @param {number} kind @param {Pose} pose @param {Partial<import('../../../core/protocol.js').SceneRecord>} [more] */
const record = (id, kind, pose, more = {}) => ({ id, version: 1, writer: 1, kind, removed: false, pose, ...more });

describe('ArScene without WebGL', () => {
  test('works on without a renderer and says why', (t) => {
    const { scene } = sceneFromAbove(t);
    assert.equal(scene.renderer, null);
    assert.match(scene.webglError, /WebGL/);
    scene.render(); // nothing to draw with, and no throw
  });

  test('the shared object pose round-trips', (t) => {
    const { scene } = sceneFromAbove(t);
    /** @type {Pose} */
    const pose = [0.05, 0, -0.02, 0, Math.sin(0.3), 0, Math.cos(0.3)];
    scene.setObjectPose(pose);
    scene.objectPose().forEach((v, i) => close(v, pose[i]));
  });

  test('projects the marker centre to the middle of the screen, and nothing while the marker is lost', (t) => {
    const { scene } = sceneFromAbove(t);
    const centre = scene.screenPosition(new Vector3(0, 0, 0));
    assert.ok(centre);
    close(centre.x, 320, 1);
    close(centre.y, 240, 1);
    // marker +x is screen right, marker -z screen up
    const right = scene.screenPosition(new Vector3(0.05, 0, 0));
    const up = scene.screenPosition(new Vector3(0, 0, -0.05));
    assert.ok(right && up && right.x > centre.x + 10 && up.y < centre.y - 10);
    scene.markerRoot.visible = false;
    assert.equal(scene.screenPosition(new Vector3()), null);
  });

  test('dragging the object moves it on the marker plane and reports it', (t) => {
    const { scene, canvas } = sceneFromAbove(t);
    /** @type {Pose[]} */
    const moved = [];
    scene.onObjectMoved = (pose) => moved.push(pose);
    // grab it off-centre: it keeps that offset to the finger
    pointer(canvas, 'pointerdown', scene.screenPosition(new Vector3(0.02, 0, 0.01)));
    assert.equal(scene.dragging, true);
    pointer(canvas, 'pointermove', scene.screenPosition(new Vector3(0.07, 0, 0.04)));
    close(scene.object.position.x, 0.05, 1e-3);
    close(scene.object.position.z, 0.03, 1e-3);
    assert.equal(scene.object.position.y, 0);
    assert.equal(moved.length, 1);
    close(moved[0][0], scene.object.position.x);
    pointer(canvas, 'pointerup', { x: 0, y: 0 });
    assert.equal(scene.dragging, false);
    pointer(canvas, 'pointermove', scene.screenPosition(new Vector3(-0.05, 0, 0)));
    assert.equal(moved.length, 1, 'no drag after pointerup');
  });

  test('a drag starting away from the object does nothing', (t) => {
    const { scene, canvas } = sceneFromAbove(t);
    pointer(canvas, 'pointerdown', scene.screenPosition(new Vector3(0.3, 0, 0.3)));
    assert.equal(scene.dragging, false);
  });

  test('the shared scene: objects of the palette are drawn where their records say, and go when removed', (t) => {
    const { scene } = sceneFromAbove(t);
    scene.setSceneObject(record(7, 1, [0.1, 0, 0.05, 0, 0, 0, 1]));
    scene.setSceneObject(record(8, 4, [-0.1, 0, 0, 0, 0, 0, 1]));
    assert.equal(scene.sceneObjects.size, 3, 'the car and two shapes');
    assert.equal(scene.sceneObjects.get(7)?.userData.kind, 1);
    close(scene.objectPose(7)[0], 0.1);
    scene.setSceneObject(record(7, 1, [0.12, 0, 0.05, 0, 0, 0, 1], { version: 2 }));
    close(scene.objectPose(7)[0], 0.12);
    scene.setSceneObject(record(7, 1, [0.12, 0, 0.05, 0, 0, 0, 1], { version: 3, removed: true }));
    assert.equal(scene.sceneObjects.has(7), false);
    assert.equal(scene.content.children.filter((/** @type {any} */ c) => c.userData.id === 7).length, 0, 'taken out of the graph');
    scene.setSceneObject(record(0, 0, [0, 0, 0, 0, 0, 0, 1], { removed: true }));
    assert.equal(scene.object.visible, false, 'the car can be removed too');
  });

  test('an object another member moves glides between its records; our own edit is drawn at once', (t) => {
    const { scene } = sceneFromAbove(t);
    scene.setSceneObject(record(7, 1, [0, 0, 0, 0, 0, 0, 1]));
    // another member drags it 1 cm per 100 ms along x
    for (let i = 1; i <= 5; i++) scene.setSceneObject(record(7, 1, [i / 100, 0, 0, 0, 0, 0, 1], { version: i + 1 }), { remote: true, at: 1000 + i * 100 });
    assert.ok(scene.movingObjects.has(7));
    scene.render(1500);
    const x = scene.objectPose(7)[0];
    assert.ok(x > 0 && x < 0.05, `drawn a little behind the newest record, between records: ${x}`);
    scene.render(1540);
    assert.ok(scene.objectPose(7)[0] >= x, 'and on it goes, never back');
    scene.render(1500 + 1001);
    close(scene.objectPose(7)[0], 0.05);
    assert.equal(scene.movingObjects.has(7), false, 'settled where the last record says');
    scene.setSceneObject(record(7, 1, [0.2, 0, 0, 0, 0, 0, 1], { version: 9 }), { remote: false });
    close(scene.objectPose(7)[0], 0.2);
  });

  test('a drag picks the object under the finger, selects it and reports its id', (t) => {
    const { scene, canvas } = sceneFromAbove(t);
    scene.setSceneObject(record(9, 2, [0.2, 0, 0, 0, 0, 0, 1]));
    /** @type {[Pose, number][]} */
    const moved = [];
    scene.onObjectMoved = (pose, id) => moved.push([pose, id]);
    pointer(canvas, 'pointerdown', scene.screenPosition(new Vector3(0.2, 0, 0)));
    assert.equal(scene.dragId, 9);
    assert.equal(scene.selectedId, 9);
    pointer(canvas, 'pointermove', scene.screenPosition(new Vector3(0.25, 0, 0.05)));
    assert.equal(moved.at(-1)?.[1], 9);
    close(scene.objectPose(9)[0], 0.25, 1e-3);
    close(scene.object.position.x, 0, 1e-9);
    pointer(canvas, 'pointerup', { x: 0, y: 0 });
  });

  test('turning: the buttons and a two-finger twist turn the selected object about the marker normal', (t) => {
    const { scene, canvas } = sceneFromAbove(t);
    /** @type {[Pose, number][]} */
    const moved = [];
    scene.onObjectMoved = (pose, id) => moved.push([pose, id]);
    scene.turnSelected(1);
    assert.equal(moved.length, 0, 'nothing selected, nothing turned');
    scene.select(0);
    scene.turnSelected(Math.PI / 2);
    const q = new Quaternion(...scene.objectPose(0).slice(3));
    close(q.angleTo(new Quaternion()), Math.PI / 2, 1e-6);
    close(scene.objectPose(0)[4], Math.sin(Math.PI / 4), 1e-6);
    // two fingers either side of the car, the second swings a quarter turn round the first
    const c = /** @type {{ x: number, y: number }} */ (scene.screenPosition(new Vector3(0, 0, 0)));
    pointer(canvas, 'pointerdown', { x: c.x - 50, y: c.y }, 1);
    pointer(canvas, 'pointerdown', { x: c.x + 50, y: c.y }, 2);
    pointer(canvas, 'pointermove', { x: c.x - 50, y: c.y - 100 }, 2);
    assert.equal(moved.at(-1)?.[1], 0);
    close(new Quaternion(...scene.objectPose(0).slice(3)).angleTo(new Quaternion()), Math.PI, 1e-6);
  });

  test('avatars right at our own camera are not drawn', (t) => {
    const { scene } = sceneFromAbove(t, 4);
    const near = new Avatar('Near', memberColour(1), 0.16, new Object3D());
    const far = new Avatar('Far', memberColour(2), 0.16, new Object3D());
    // our camera is 4 marker sides = 0.64 m above the marker
    near.setTarget([0, 0.64 - NEAR_AVATAR_M / 2, 0, 0, 0, 0, 1]);
    far.setTarget([0.2, 0.1, 0, 0, 0, 0, 1]);
    scene.avatars.set(1, near);
    scene.avatars.set(2, far);
    scene.content.add(near.group, far.group);
    scene.render();
    assert.equal(near.group.visible, false);
    assert.equal(far.group.visible, true);
  });
});
