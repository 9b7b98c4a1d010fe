// The shared scene drawn over the camera picture with three.js: everything
// hangs under `markerRoot`, which AR.js places on the marker each frame.
// Marker frame (AR.js): the marker lies in the x-z plane, +y points out of
// it, +z towards the bottom edge of the printed marker; metres.
//   - one avatar per other member: a small camera frustum in the member's
//     colour with their name, drawn where core/playout.js says it is at each
//     frame (by default predicted from its updates, so it moves smoothly
//     between the updates of the action cycle and across a lost one);
//   - the group's shared scene (core/scene.js): the toy car (object 0) and the
//     objects members added from the palette (shapes.js), each dragged on the
//     marker plane with a finger and turned with two (or the HUD's buttons).
// The renderer is transparent, so the video behind it shows through.

import {
  AmbientLight, BoxGeometry, BufferGeometry, Camera, CanvasTexture, CylinderGeometry, DirectionalLight,
  EdgesGeometry, Float32BufferAttribute, Group, LineBasicMaterial, LineSegments, Matrix4, Mesh,
  MeshBasicMaterial, MeshStandardMaterial, Object3D, Plane, Quaternion, Raycaster, Scene, Sprite, SpriteMaterial,
  SRGBColorSpace, Vector2, Vector3, WebGLRenderer, DoubleSide, RingGeometry,
} from 'three';

import { DEFAULT_PLAYOUT, PlayoutWatch, StreamPlayout } from '../../../core/playout.js';
import { coverScale, projectionMatrixGL } from './camera-model.js';
import { makeShape } from './shapes.js';

/** Id of the car, the legacy single object (core/scene.js CAR_ID). */
const CAR = 0;

/** @typedef {import('../../../core/protocol.js').Pose} Pose */
/** @typedef {{ seq: number, sendTime: number, arrival: number }} AvatarUpdate sender's clock, receiver's clock (ms) */

/** Avatars closer than this to our own camera are not drawn (they would fill the screen). */
export const NEAR_AVATAR_M = 0.12;

/** A moved object's glide starts from where it was drawn, as if that pose came this long before the first record, ms. */
const OBJECT_START_MS = 167;
/** An object no record moved for this long is where its last record says, ms (the glide has ended). */
const OBJECT_SETTLE_MS = 1000;

/**
 * A pose meaning "not tracking yet": the identity at the marker centre.
 * Avatars with it are hidden.
 * @param {Pose | null} pose
 */
export function isUntracked(pose) {
  return !pose || (pose[0] === 0 && pose[1] === 0 && pose[2] === 0 && pose[6] === 1);
}

/**
 * A stable, distinct colour for a member id (golden-angle hues).
 * @param {number} id
 * @returns {string} CSS hsl()
 */
export function memberColour(id) {
  const hue = Math.round((id * 137.508) % 360);
  return `hsl(${hue}, 80%, 55%)`;
}

/**
 * The scene graph without a renderer (so it can be built and checked in
 * Node): the camera, `markerRoot` that AR.js moves onto the marker (its unit
 * is one marker side), and under it `content` in metres with the light, the
 * tracking ring and the shared object.
 * @param {number} markerSize marker side in metres
 */
export function buildSceneGraph(markerSize) {
  const scene = new Scene();
  const camera = new Camera();
  scene.add(camera);
  // AR.js moves markerRoot onto the marker; its unit is one marker side.
  const markerRoot = new Group();
  markerRoot.matrixAutoUpdate = false;
  markerRoot.visible = false;
  scene.add(markerRoot);
  // Everything shared lives in `content`, in metres.
  const content = new Group();
  content.scale.setScalar(1 / markerSize);
  markerRoot.add(content);
  scene.add(new AmbientLight(0xffffff, 1.6));
  const sun = new DirectionalLight(0xffffff, 2.2);
  sun.position.set(0.3, 1, 0.5);
  content.add(sun);
  content.add(sun.target);

  // a thin ring around the marker shows that tracking holds
  const ring = new Mesh(
    new RingGeometry(markerSize * 0.72, markerSize * 0.76, 48),
    new MeshBasicMaterial({ color: 0x39d98a, transparent: true, opacity: 0.8, side: DoubleSide }),
  );
  ring.rotation.x = -Math.PI / 2;
  content.add(ring);

  const object = makeToyCar(markerSize * 0.45);
  content.add(object);
  return { scene, camera, markerRoot, content, ring, object };
}

/**
 * The shared scene over the camera picture: the graph, its WebGL renderer
 * (when the browser has one), the avatars and dragging the shared object.
 */
export class ArScene {
  /**
   * @param {HTMLCanvasElement} canvas
   * @param {{ markerSize: number, pixelRatio?: number, playout?: import('../../../core/playout.js').PlayoutMode }} options
   */
  constructor(canvas, { markerSize, pixelRatio = Math.min(window.devicePixelRatio || 1, 2), playout = DEFAULT_PLAYOUT }) {
    this.canvas = canvas;
    this.markerSize = markerSize;
    /** How avatars are drawn between updates (core/playout.js). */
    this.playoutMode = playout;
    /** Why nothing can be drawn, if WebGL is unavailable; the scene graph still works. */
    this.webglError = '';
    /** @type {WebGLRenderer | null} */
    this.renderer = null;
    try {
      this.renderer = new WebGLRenderer({ canvas, alpha: true, antialias: true, premultipliedAlpha: true });
      this.renderer.setClearColor(0x000000, 0);
      this.renderer.setPixelRatio(pixelRatio);
      this.renderer.outputColorSpace = SRGBColorSpace;
    } catch (err) {
      this.webglError = String(/** @type {{ message?: string } | null} */ (err)?.message ?? err);
    }
    const graph = buildSceneGraph(markerSize);
    this.scene = graph.scene;
    this.camera = graph.camera;
    this.markerRoot = graph.markerRoot;
    this.content = graph.content;
    this.object = graph.object;
    /** @type {Map<number, Object3D>} the scene's objects by id; the car is CAR */
    this.sceneObjects = new Map([[CAR, /** @type {Object3D} */ (this.object)]]);
    /**
     * Objects another member is moving, drawn through a playout between its records (by object id).
     * @type {Map<number, { playout: StreamPlayout, seq: number, lastAt: number }>}
     */
    this.movingObjects = new Map();
    /** @type {number | null} the object last touched: what the turn and remove buttons act on */
    this.selectedId = null;
    /** @type {number} the object being dragged */
    this.dragId = CAR;
    /** Bumped whenever an object changes, so the frame is drawn again. */
    this.sceneVersion = 0;

    /** @type {import('./camera-model.js').Intrinsics | null} */
    this.intrinsics = null;
    this.videoSize = { width: 640, height: 480 };

    /** @type {Map<number, Avatar>} */
    this.avatars = new Map();

    /** @type {((pose: Pose, id: number) => void) | null} called while the user drags or turns an object */
    this.onObjectMoved = null;
    /** @type {((id: number | null) => void) | null} the selection changed */
    this.onSelect = null;
    this.dragging = false;
    this.raycaster = new Raycaster();
    this.plane = new Plane(new Vector3(0, 1, 0), 0);
    this.grabOffset = new Vector3();
    this.installPointer();
    this.eye = new Vector3();
    this.toContent = new Matrix4();
    /** What the last drawn frame showed, to skip identical frames. */
    this.drawnKey = '';
    this.sizeKey = '';
    this.resize();
  }

  /**
   * The camera the picture comes from, for the projection.
   * @param {import('./camera-model.js').Intrinsics} intrinsics of the processed image
   * @param {number} videoWidth @param {number} videoHeight of the displayed video
   */
  setCamera(intrinsics, videoWidth, videoHeight) {
    this.intrinsics = intrinsics;
    this.videoSize = { width: videoWidth, height: videoHeight };
    this.resize();
  }

  /** Fits the renderer and the projection to the canvas's size and the video's shape. */
  resize() {
    const w = this.canvas.clientWidth || window.innerWidth;
    const h = this.canvas.clientHeight || window.innerHeight;
    this.renderer?.setSize(w, h, false);
    this.sizeKey = `${w}x${h}|${this.intrinsics?.width}x${this.intrinsics?.height}`;
    if (!this.intrinsics) return;
    const { scaleX, scaleY } = coverScale(this.videoSize.width, this.videoSize.height, w, h);
    // camera space is in marker sides (see markerRoot)
    this.camera.projectionMatrix.fromArray(projectionMatrixGL(this.intrinsics, { near: 0.02, far: 200, scaleX, scaleY }));
    this.camera.projectionMatrixInverse.copy(this.camera.projectionMatrix).invert();
  }

  /**
   * Another member's avatar, hidden until their first tracked pose.
   * @param {number} id @param {string} name
   */
  addAvatar(id, name) {
    if (this.avatars.has(id)) return;
    const avatar = new Avatar(name, memberColour(id), this.markerSize, undefined, this.playoutMode);
    this.avatars.set(id, avatar);
    this.content.add(avatar.group);
  }

  /** @param {number} id a member that left */
  removeAvatar(id) {
    const avatar = this.avatars.get(id);
    if (!avatar) return;
    this.content.remove(avatar.group);
    avatar.dispose();
    this.avatars.delete(id);
  }

  /**
   * A member's update (camera pose in the marker frame), for its avatar's playout.
   * @param {number} id @param {Pose} pose @param {AvatarUpdate} [update] when it was sent and arrived
   */
  setAvatarPose(id, pose, update) {
    this.avatars.get(id)?.setTarget(pose, update);
  }

  /** @param {Pose} pose the car's pose (marker frame, metres) */
  setObjectPose(pose) {
    this.placeObject(this.object, pose);
  }

  /** @param {Object3D} o @param {Pose} pose */
  placeObject(o, pose) {
    o.position.set(pose[0], pose[1], pose[2]);
    o.quaternion.set(pose[3], pose[4], pose[5], pose[6]);
    this.sceneVersion++;
  }

  /**
   * A record of the shared scene as this member now holds it: drawn, moved or taken away. A
   * move that came from another member is drawn through a playout (`interpolate`: a dragged object
   * stops where the hand stops; predicting it would carry it past at every release), so that the
   * object glides between that member's records instead of stepping at each.
   * @param {import('../../../core/protocol.js').SceneRecord} record
   * @param {{ remote?: boolean, at?: number }} [how] remote: another member's edit, arrived at `at` (performance.now())
   */
  setSceneObject(record, how = {}) {
    let o = this.sceneObjects.get(record.id);
    if (how.remote && o?.visible && !record.removed) {
      const at = how.at ?? performance.now();
      let m = this.movingObjects.get(record.id);
      if (!m) {
        m = { playout: new StreamPlayout('interpolate'), seq: 0, lastAt: at };
        // where it is drawn now is where the glide starts
        m.playout.push(m.seq++, at - OBJECT_START_MS, at - OBJECT_START_MS, this.objectPose(record.id));
        this.movingObjects.set(record.id, m);
      }
      m.playout.push(m.seq++, at, at, record.pose);
      m.lastAt = at;
      return;
    }
    this.movingObjects.delete(record.id);
    if (record.removed) {
      if (o && record.id !== CAR) { this.content.remove(o); disposeTree(o); this.sceneObjects.delete(record.id); }
      if (o && record.id === CAR) o.visible = false;
      if (this.selectedId === record.id) this.select(null);
      if (this.dragging && this.dragId === record.id) this.dragging = false;
      this.sceneVersion++;
      return;
    }
    if (!o) {
      o = makeShape(record.kind, this.markerSize * 0.25);
      o.userData.id = record.id;
      this.content.add(o);
      this.sceneObjects.set(record.id, o);
    }
    o.visible = true;
    this.placeObject(o, record.pose);
  }

  /**
   * Places the objects other members are moving where their playouts say; one whose last record
   * is OBJECT_SETTLE_MS old is put at that record and leaves the playout.
   * @param {number} now
   */
  drawMovingObjects(now) {
    for (const [id, m] of this.movingObjects) {
      const o = this.sceneObjects.get(id);
      if (!o) { this.movingObjects.delete(id); continue; }
      if (now - m.lastAt > OBJECT_SETTLE_MS) {
        this.placeObject(o, /** @type {Pose} */ (m.playout.samples.at(-1)?.pose));
        this.movingObjects.delete(id);
        continue;
      }
      const drawn = m.playout.poseAt(now);
      if (drawn) this.placeObject(o, drawn.pose);
    }
  }

  /** @param {number} [id] @returns {Pose} an object's pose as drawn (default: the car) */
  objectPose(id = CAR) {
    const o = this.sceneObjects.get(id) ?? this.object;
    const p = o.position;
    const q = o.quaternion;
    return [p.x, p.y, p.z, q.x, q.y, q.z, q.w];
  }

  /** @param {number | null} id */
  select(id) {
    this.selectedId = id;
    this.onSelect?.(id);
  }

  /**
   * Turns the selected object about the marker's normal.
   * @param {number} radians counter-clockwise seen from above
   */
  turnSelected(radians) {
    const id = this.selectedId;
    const o = id === null ? undefined : this.sceneObjects.get(id);
    if (!o || id === null) return;
    o.quaternion.premultiply(new Quaternion().setFromAxisAngle(new Vector3(0, 1, 0), radians)).normalize();
    this.sceneVersion++;
    this.onObjectMoved?.(this.objectPose(id), id);
  }

  /**
   * Places the avatars where their playout says and draws a frame, unless nothing on
   * screen changed (software WebGL on a busy phone or test machine is not free).
   */
  /** @param {number} [now] performance.now() of the frame */
  render(now = performance.now()) {
    let moving = false;
    for (const avatar of this.avatars.values()) moving = avatar.draw(now) || moving;
    this.drawMovingObjects(now);
    // An avatar right at our own camera would fill the screen: leave it out.
    if (this.markerRoot.visible) {
      this.markerRoot.updateMatrixWorld(true);
      const eye = this.eye.set(0, 0, 0).applyMatrix4(this.toContent.copy(this.content.matrixWorld).invert());
      for (const avatar of this.avatars.values()) {
        avatar.group.visible = avatar.hasPose && avatar.group.position.distanceTo(eye) > NEAR_AVATAR_M;
      }
    }
    const e = this.markerRoot.matrix.elements;
    const key = `${this.markerRoot.visible}|${this.sceneVersion}|${this.object.position.x},${this.object.position.z},${this.object.quaternion.y}|`
      + `${this.avatars.size}|${[...this.avatars.values()].map((a) => a.group.visible).join()}|${e.join()}|${this.sizeKey}`;
    if (!moving && key === this.drawnKey) return;
    this.drawnKey = key;
    this.renderer?.render(this.scene, this.camera);
  }

  /**
   * Where a marker-frame point (metres) is on screen, in CSS pixels of the
   * canvas, or null while the marker is not visible.
   * @param {Vector3} local
   */
  screenPosition(local) {
    if (!this.markerRoot.visible || !this.intrinsics) return null;
    this.markerRoot.updateMatrixWorld(true);
    const p = local.clone().applyMatrix4(this.content.matrixWorld).applyMatrix4(this.camera.projectionMatrix);
    const rect = this.canvas.getBoundingClientRect();
    return { x: rect.left + ((p.x + 1) / 2) * rect.width, y: rect.top + ((1 - p.y) / 2) * rect.height };
  }

  /** @param {number} [id] @returns an object's centre on screen (CSS pixels; default the car), or null */
  objectScreenPosition(id = CAR) {
    const o = this.sceneObjects.get(id);
    if (!o) return null;
    return this.screenPosition(o.position.clone().add(new Vector3(0, this.markerSize * 0.05, 0)));
  }

  /**
   * The object under a point of the canvas: the nearest one the ray hits, else the nearest on the
   * marker plane within 0.3 marker sides of where the ray meets it.
   * @param {Vector3} hit where the ray meets the marker plane
   * @returns {number | null}
   */
  objectAt(hit) {
    const visible = [...this.sceneObjects].filter(([, o]) => o.visible);
    const hits = this.raycaster.intersectObjects(visible.map(([, o]) => o), true);
    if (hits.length > 0) {
      /** @type {Object3D | null} */
      let o = hits[0].object;
      while (o && !visible.some(([, v]) => v === o)) o = o.parent;
      const found = visible.find(([, v]) => v === o);
      if (found) return found[0];
    }
    let best = null;
    let bestDistance = this.markerSize * 0.3;
    for (const [id, o] of visible) {
      const d = hit.distanceTo(new Vector3(o.position.x, 0, o.position.z));
      if (d < bestDistance) { best = id; bestDistance = d; }
    }
    return best;
  }

  /**
   * The ray through a point of the canvas, in marker coordinates (metres).
   * @param {number} clientX @param {number} clientY
   */
  rayInMarker(clientX, clientY) {
    const rect = this.canvas.getBoundingClientRect();
    const ndc = new Vector2(((clientX - rect.left) / rect.width) * 2 - 1, 1 - ((clientY - rect.top) / rect.height) * 2);
    this.markerRoot.updateMatrixWorld(true);
    const toMarker = new Matrix4().copy(this.content.matrixWorld).invert();
    const origin = new Vector3(0, 0, 0).applyMatrix4(toMarker);
    const far = new Vector3(ndc.x, ndc.y, 0.5).applyMatrix4(this.camera.projectionMatrixInverse).applyMatrix4(toMarker);
    this.raycaster.ray.origin.copy(origin);
    this.raycaster.ray.direction.copy(far.sub(origin).normalize());
    return this.raycaster.ray;
  }

  /** Dragging objects on the marker plane with a finger or the mouse; turning them with two fingers. */
  installPointer() {
    const canvas = this.canvas;
    canvas.style.touchAction = 'none';
    const hit = new Vector3();
    /** @type {Map<number, { x: number, y: number }>} the pointers down, for a two-finger turn */
    const pointers = new Map();
    canvas.addEventListener('pointerdown', (event) => {
      pointers.set(event.pointerId, { x: event.clientX, y: event.clientY });
      if (pointers.size > 1 || !this.markerRoot.visible || !this.intrinsics) return;
      const ray = this.rayInMarker(event.clientX, event.clientY);
      if (!ray.intersectPlane(this.plane, hit)) return;
      const id = this.objectAt(hit);
      if (id === null) return;
      const o = /** @type {Object3D} */ (this.sceneObjects.get(id));
      this.select(id);
      this.dragging = true;
      this.dragId = id;
      this.grabOffset.copy(o.position).sub(hit).setY(0);
      canvas.setPointerCapture?.(event.pointerId);
      event.preventDefault();
    });
    canvas.addEventListener('pointermove', (event) => {
      const before = pointers.get(event.pointerId);
      if (before && pointers.size === 2) {
        this.twist(pointers, event.pointerId, { x: event.clientX, y: event.clientY });
        event.preventDefault();
        return;
      }
      if (!this.dragging || !this.markerRoot.visible) return;
      const o = this.sceneObjects.get(this.dragId);
      const ray = this.rayInMarker(event.clientX, event.clientY);
      if (!o || !ray.intersectPlane(this.plane, hit)) return;
      const limit = this.markerSize * 3;
      o.position.set(clamp(hit.x + this.grabOffset.x, -limit, limit), o.position.y, clamp(hit.z + this.grabOffset.z, -limit, limit));
      this.sceneVersion++;
      this.onObjectMoved?.(this.objectPose(this.dragId), this.dragId);
      event.preventDefault();
    });
    const end = (/** @type {PointerEvent} */ event) => {
      pointers.delete(event.pointerId);
      if (!this.dragging) return;
      this.dragging = false;
      canvas.releasePointerCapture?.(event.pointerId);
    };
    canvas.addEventListener('pointerup', end);
    canvas.addEventListener('pointercancel', end);
  }

  /**
   * Two fingers down: the angle between them turned by so much, so does the selected object.
   * @param {Map<number, { x: number, y: number }>} pointers
   * @param {number} movedId @param {{ x: number, y: number }} to
   */
  twist(pointers, movedId, to) {
    const [a, b] = [...pointers.entries()];
    const angle = (/** @type {{ x: number, y: number }} */ p, /** @type {{ x: number, y: number }} */ q) => Math.atan2(q.y - p.y, q.x - p.x);
    const before = angle(a[1], b[1]);
    pointers.set(movedId, to);
    const [c, d] = [...pointers.values()];
    this.dragging = false;
    // screen y points down: a clockwise turn on screen is a turn to the right seen from above
    this.turnSelected(before - angle(c, d));
  }
}

/** Frees the GPU resources of an object's meshes. @param {Object3D} root */
function disposeTree(root) {
  root.traverse((/** @type {any} */ o) => {
    o.geometry?.dispose?.();
    o.material?.dispose?.();
  });
}

/** @param {number} v @param {number} lo @param {number} hi */
function clamp(v, lo, hi) {
  return Math.min(hi, Math.max(lo, v));
}

/**
 * Another member: a camera frustum (apex at their camera, opening along
 * their viewing direction, -z) and a name tag.
 */
export class Avatar {
  /**
   * @param {string} name @param {string} colour @param {number} markerSize
   * @param {Object3D} [label] the name tag; by default drawn on a 2D canvas (tests without a DOM pass their own)
   * @param {import('../../../core/playout.js').PlayoutMode} [mode] how it is drawn between updates
   */
  constructor(name, colour, markerSize, label, mode = DEFAULT_PLAYOUT) {
    this.name = name;
    this.group = new Group();
    this.group.visible = false;
    const depth = markerSize * 0.3;
    const hw = depth * 0.5;
    const hh = depth * 0.375;
    const apex = [0, 0, 0];
    const corners = [[-hw, -hh, -depth], [hw, -hh, -depth], [hw, hh, -depth], [-hw, hh, -depth]];
    const positions = [];
    for (let i = 0; i < 4; i++) {
      positions.push(...apex, ...corners[i], ...corners[(i + 1) % 4]);
    }
    positions.push(...corners[0], ...corners[1], ...corners[2], ...corners[0], ...corners[2], ...corners[3]);
    const geometry = new BufferGeometry();
    geometry.setAttribute('position', new Float32BufferAttribute(positions, 3));
    geometry.computeVertexNormals();
    this.body = new Mesh(geometry, new MeshBasicMaterial({ color: colour, transparent: true, opacity: 0.45, side: DoubleSide, depthWrite: false }));
    this.edges = new LineSegments(new EdgesGeometry(geometry), new LineBasicMaterial({ color: colour }));
    // the "up" side of their screen, so one can tell how they hold the phone
    const top = new Mesh(new BoxGeometry(hw * 0.5, hh * 0.25, depth * 0.04), new MeshBasicMaterial({ color: colour }));
    top.position.set(0, hh * 1.3, -depth);
    this.label = label ?? makeLabel(name, colour, markerSize * 0.4);
    this.label.position.set(0, hh * 2.2, -depth * 0.5);
    this.group.add(this.body, this.edges, top, this.label);
    this.playout = new StreamPlayout(mode);
    /** What this page can know of its drawing of them (no truth here): for the study report. */
    this.watch = new PlayoutWatch();
    /** Seq of updates given without one (fixed poses). */
    this.localSeq = 0;
    this.hasPose = false;
  }

  /**
   * An update of theirs: into the playout; an untracked pose hides the avatar and starts its playout over.
   * @param {Pose} pose @param {AvatarUpdate} [update] without it (a fixed pose, a test), sent and arrived now
   */
  setTarget(pose, update) {
    if (isUntracked(pose)) {
      this.group.visible = false;
      this.hasPose = false;
      this.playout = new StreamPlayout(this.playout.mode);
      this.watch.last = null;
      return;
    }
    const now = performance.now();
    const u = update ?? { seq: ++this.localSeq, sendTime: now, arrival: now };
    this.playout.push(u.seq, u.sendTime, u.arrival, pose);
    if (!this.hasPose) this.place(pose);
    this.hasPose = true;
    this.group.visible = true;
  }

  /**
   * Puts the avatar where the playout draws it at `now`.
   * @param {number} now performance.now() of the frame
   * @returns {boolean} whether it visibly moved
   */
  draw(now) {
    if (!this.hasPose) return false;
    const drawn = this.playout.poseAt(now);
    if (!drawn) return false;
    this.watch.frame(now, drawn.pose, drawn.state, this.playout.behindMs(now), this.playout.speedMps());
    const [x, y, z, qx, qy, qz, qw] = drawn.pose;
    const { position: p, quaternion: q } = this.group;
    // A frame's move, from the numbers themselves: no objects made per avatar per frame.
    const dot = Math.abs(q.x * qx + q.y * qy + q.z * qz + q.w * qw) / (Math.hypot(qx, qy, qz, qw) || 1);
    const moved = (p.x - x) ** 2 + (p.y - y) ** 2 + (p.z - z) ** 2 > 1e-8 || 2 * Math.acos(Math.min(1, dot)) > 1e-4;
    this.place(drawn.pose);
    return moved && this.group.visible;
  }

  /** Where their newest update says they are (marker frame, metres), or null before one. */
  newestPosition() {
    const pose = this.playout.samples.at(-1)?.pose;
    return pose ? [pose[0], pose[1], pose[2]] : null;
  }

  /** How far behind the sender's present it is drawn, ms (StreamPlayout.behindMs). @param {number} [now] */
  behindMs(now) {
    return this.hasPose ? this.playout.behindMs(now) : 0;
  }

  /** @param {Pose} pose */
  place(pose) {
    this.group.position.set(pose[0], pose[1], pose[2]);
    this.group.quaternion.set(pose[3], pose[4], pose[5], pose[6]).normalize();
  }

  /** Frees the GPU resources of its geometry, materials and label texture. */
  dispose() {
    this.group.traverse((/** @type {any} */ o) => {
      o.geometry?.dispose?.();
      o.material?.map?.dispose?.();
      o.material?.dispose?.();
    });
  }
}

/**
 * A name tag that always faces the viewer.
 * @param {string} text @param {string} colour @param {number} height world height of the tag
 */
function makeLabel(text, colour, height) {
  const canvas = document.createElement('canvas');
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d'));
  const font = 'bold 44px system-ui, sans-serif';
  ctx.font = font;
  const w = Math.ceil(ctx.measureText(text).width) + 36;
  canvas.width = w;
  canvas.height = 64;
  ctx.font = font;
  ctx.fillStyle = 'rgba(15, 18, 26, 0.78)';
  ctx.beginPath();
  ctx.roundRect(0, 0, w, 64, 18);
  ctx.fill();
  ctx.fillStyle = colour;
  ctx.fillRect(0, 56, w, 8);
  ctx.fillStyle = '#fff';
  ctx.textBaseline = 'middle';
  ctx.fillText(text, 18, 30);
  const texture = new CanvasTexture(canvas);
  texture.colorSpace = SRGBColorSpace;
  const sprite = new Sprite(new SpriteMaterial({ map: texture, depthTest: false, transparent: true }));
  sprite.scale.set((height * w) / 64 / 2.5, height / 2.5, 1);
  sprite.renderOrder = 10;
  return sprite;
}

/**
 * The shared object: a toy car `length` long, standing on the marker plane,
 * nose towards -z.
 * @param {number} length
 */
function makeToyCar(length) {
  const car = new Group();
  const w = length * 0.5;
  const paint = new MeshStandardMaterial({ color: 0xe8452c, roughness: 0.45, metalness: 0.1 });
  const glass = new MeshStandardMaterial({ color: 0x9fd3ff, roughness: 0.1, metalness: 0.3 });
  const tyre = new MeshStandardMaterial({ color: 0x22252b, roughness: 0.9 });
  const body = new Mesh(new BoxGeometry(w, length * 0.2, length), paint);
  body.position.y = length * 0.17;
  const cabin = new Mesh(new BoxGeometry(w * 0.86, length * 0.17, length * 0.5), glass);
  cabin.position.set(0, length * 0.35, length * 0.05);
  const roof = new Mesh(new BoxGeometry(w * 0.9, length * 0.03, length * 0.46), paint);
  roof.position.set(0, length * 0.445, length * 0.05);
  car.add(body, cabin, roof);
  const wheel = new CylinderGeometry(length * 0.11, length * 0.11, w * 0.22, 20);
  for (const [x, z] of [[-1, -1], [1, -1], [-1, 1], [1, 1]]) {
    const m = new Mesh(wheel, tyre);
    m.rotation.z = Math.PI / 2;
    m.position.set(x * w * 0.5, length * 0.11, z * length * 0.32);
    car.add(m);
  }
  const lamp = new MeshBasicMaterial({ color: 0xfff3b0 });
  for (const x of [-1, 1]) {
    const m = new Mesh(new BoxGeometry(w * 0.18, length * 0.05, length * 0.01), lamp);
    m.position.set(x * w * 0.3, length * 0.2, -length * 0.505);
    car.add(m);
  }
  return car;
}
