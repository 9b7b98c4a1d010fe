// Marker tracking with AR.js (ArToolkitSource -> ArToolkitContext ->
// ArMarkerControls), and the camera pose relative to the marker that the
// action cycle sends.
//
// Sources:
//   camera     the rear camera (getUserMedia, facingMode 'environment'), AR.js 'webcam'
//   video      a video file AR.js plays itself (sourceType 'video', sourceUrl)
//   synthetic  the test video of synthetic.js drawn live on a canvas and fed to
//              AR.js's 'video' path as a MediaStream (canvas.captureStream):
//              for browsers that cannot fake a camera from a file (Firefox)
//
// The camera model: AR.js processes a copy of each frame scaled to fit
// 640 px on its long side. For a 640x480 picture that is exactly the ideal
// camera of /markers/camera_para.dat (made by `carlab markers`); for other
// shapes (a phone in portrait gives 480x640, some give 16:9) the same ideal
// camera is built for that size (camera-model.js) and handed to AR.js as
// bytes, so the pixels stay square.

import { Matrix4, Quaternion, Vector3 } from 'three';

import { encodeCameraPara, idealCamera } from './camera-model.js';
import { PATTERN_RATIO } from './marker-pattern.js';
import { CODE_CELL, DEFAULT_VIDEO, frameCodeOrigin, readFrameCode, renderFrame } from './synthetic.js';
import { extrapolate } from '../../../core/playout.js';

/** @typedef {import('../../../core/protocol.js').Pose} Pose */
/** @typedef {typeof import('@ar-js-org/ar.js/three.js/build/ar-threex.mjs')} ArJs */
/** @typedef {InstanceType<ArJs['ArToolkitContext']>} ArToolkitContext */
/** @typedef {InstanceType<ArJs['ArMarkerControls']>} ArMarkerControls */

/**
 * AR.js, loaded when tracking starts rather than with the page: it is most of
 * the page's script (ARToolKit compiled to JavaScript), and a page without a
 * camera (source=none) never needs it. The module loader loads it once.
 * @returns {Promise<ArJs>}
 */
const loadArjs = () => import('@ar-js-org/ar.js/three.js/build/ar-threex.mjs');

/**
 * @typedef {object} TrackingOptions
 * @property {{ type: 'camera' } | { type: 'video', url: string } | { type: 'synthetic' }} source
 * @property {import('./marker-pattern.js').MarkerKind} marker
 * @property {number} markerSize marker side in metres
 * @property {{ visible: boolean, matrix: Matrix4 }} markerRoot three.js Group that AR.js moves onto the marker (its unit: one marker side)
 * @property {string} [assets] base URL of the marker assets, default '/markers/'
 * @property {boolean} [probe] read the synthetic video's frame codes and log every processed frame
 * @property {(frame: FrameInfo) => void} [onFrame]
 * @property {(camera: import('./camera-model.js').Intrinsics) => void} [onCamera] the picture changed shape
 *
 * @typedef {object} FrameInfo
 * @property {number} t performance.now() of processing
 * @property {boolean} visible marker found in this frame
 * @property {number} frame synthetic frame index (probe mode), else -1
 * @property {number[] | null} position camera position in the marker frame (metres), when visible
 * @property {number[] | null} quaternion camera orientation in the marker frame, when visible
 */

/** Long side of the image AR.js processes. */
export const PROCESSING_LONG_SIDE = 640;

/**
 * A tracking failure a person can act on.
 */
export class TrackingError extends Error {
  /** @param {'camera-denied' | 'camera-missing' | 'camera-busy' | 'insecure' | 'no-camera-api' | 'source' | 'assets'} code @param {string} message */
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/**
 * The size AR.js processes a video at: the video's shape, 640 px on its long side.
 * @param {HTMLVideoElement} element
 */
export function processingSize(element) {
  const vw = element.videoWidth;
  const vh = element.videoHeight;
  const s = PROCESSING_LONG_SIDE / Math.max(vw, vh);
  return { width: Math.round((vw * s) / 2) * 2, height: Math.round((vh * s) / 2) * 2 };
}

/**
 * The AR.js context settings for a picture of one size: barcode markers need
 * the matrix detector as well as the pattern one.
 * @param {import('./marker-pattern.js').MarkerKind} marker
 * @param {number} width @param {number} height of the processed picture
 * @param {string | Uint8Array} cameraPara camera_para.dat's URL or its bytes (cameraParameters)
 * @returns {import('@ar-js-org/ar.js/three.js/build/ar-threex.mjs').ArToolkitContextParameters}
 */
export function contextOptions(marker, width, height, cameraPara) {
  return {
    cameraParametersUrl: cameraPara,
    detectionMode: marker.type === 'barcode' ? 'mono_and_matrix' : 'mono',
    matrixCodeType: '3x3',
    canvasWidth: width,
    canvasHeight: height,
    patternRatio: PATTERN_RATIO,
    maxDetectionRate: 60,
    imageSmoothingEnabled: true,
  };
}

/**
 * The marker controls' settings. ARToolKit's pose estimate fails
 * (icpGetInitXw2Xc) for tiny marker widths such as 0.16: it works in marker
 * sides (size 1) and we scale to metres ourselves (cameraPoseInMarker), so
 * markerRoot's matrix is in marker sides.
 * @param {import('./marker-pattern.js').MarkerKind} marker
 * @param {string} assets base URL of the marker assets
 * @returns {import('@ar-js-org/ar.js/three.js/build/ar-threex.mjs').ArMarkerControlsParameters}
 */
export function markerOptions(marker, assets) {
  return marker.type === 'barcode'
    ? { type: 'barcode', barcodeValue: marker.value, size: 1, changeMatrixMode: 'modelViewMatrix' }
    : { type: 'pattern', patternUrl: `${assets}carlab.patt`, size: 1, changeMatrixMode: 'modelViewMatrix' };
}

/**
 * The camera parameters AR.js gets: the file for the 640x480 picture it was
 * made for, else the same ideal camera for this size, as bytes.
 * @param {import('./camera-model.js').Intrinsics} camera @param {string} assets
 * @returns {string | Uint8Array}
 */
export function cameraParameters(camera, assets) {
  return camera.width === 640 && camera.height === 480 ? `${assets}camera_para.dat` : encodeCameraPara(camera);
}

/**
 * What the frame loop needs of a tracker (createTracker's result, or a fake in tests).
 * @typedef {object} FrameTracker
 * @property {Pick<ArToolkitContext, 'update' | 'arController'>} context
 * @property {number} codeY top row of the synthetic video's frame code in the processed picture
 *
 * @typedef {FrameTracker & {
 *   camera: import('./camera-model.js').Intrinsics,
 *   context: ArToolkitContext,
 *   controls: ArMarkerControls,
 *   dispose: () => void,
 * }} Tracker
 */

/**
 * An AR.js context and marker controls for one picture size.
 * @param {HTMLVideoElement} element
 * @param {TrackingOptions} options
 * @param {string} assets
 * @returns {Promise<Tracker>}
 */
async function createTracker(element, options, assets) {
  const { ArToolkitContext, ArMarkerControls } = await loadArjs();
  const { width, height } = processingSize(element);
  const camera = idealCamera(width, height);
  const context = new ArToolkitContext(contextOptions(options.marker, width, height, cameraParameters(camera, assets)));
  await new Promise((resolve) => context.init(resolve));
  // AR.js reads every frame back from its 2D canvas (getImageData): keep that
  // canvas in CPU memory, or a GPU-backed one stalls on every read.
  const ar = context.arController;
  const processingCanvas = document.createElement('canvas');
  processingCanvas.width = width;
  processingCanvas.height = height;
  const processingCtx = processingCanvas.getContext('2d', { willReadFrequently: true });
  if (processingCtx && ar) {
    processingCtx.imageSmoothingEnabled = ar.ctx.imageSmoothingEnabled;
    ar.canvas = processingCanvas;
    ar.ctx = processingCtx;
  }
  const controls = new ArMarkerControls(context, options.markerRoot, markerOptions(options.marker, assets));
  return {
    camera,
    context,
    controls,
    codeY: frameCodeOrigin(height).y,
    dispose() {
      try { context.dispose(); } catch { /* already gone */ }
    },
  };
}

/**
 * Tracking counters, read by the HUD and the tests (window.carlab.tracking.stats).
 * @param {number} [startedAt]
 */
export function createStats(startedAt = performance.now()) {
  return {
    processed: 0,
    detected: 0,
    startedAt,
    /** @type {number | null} */
    lastSeenAt: null,
    /** smoothed time AR.js takes per frame, ms */
    processMs: 0,
    /** processing time of every frame, summed (ms): a study's mean ms per frame (core/report.js) */
    processMsSum: 0,
    /** processing times of the last second, for frames per second */
    recent: /** @type {number[]} */ ([]),
    /** frames whose processing threw */
    errors: 0,
  };
}

/** @typedef {ReturnType<typeof createStats>} TrackingStats */

/**
 * Counts one processed frame.
 * @param {TrackingStats} stats
 * @param {number} begin when AR.js started on it @param {number} now when it finished (ms)
 * @param {boolean} visible marker found in it
 */
export function countFrame(stats, begin, now, visible) {
  // exponential smoothing; the first frame seeds it
  stats.processMs = stats.processMs ? 0.9 * stats.processMs + 0.1 * (now - begin) : now - begin;
  stats.processMsSum += now - begin;
  stats.processed++;
  stats.recent.push(now);
  while (stats.recent.length && now - stats.recent[0] > 1000) stats.recent.shift();
  if (visible) {
    stats.detected++;
    stats.lastSeenAt = now;
  }
}

/**
 * Processed frames per second over the last second.
 * @param {TrackingStats} stats
 */
export function framesPerSecond(stats) {
  const { recent } = stats;
  return recent.length > 1 ? (1000 * (recent.length - 1)) / (recent[recent.length - 1] - recent[0]) : 0;
}

/**
 * Reusable three.js objects for cameraPoseInMarker, so tracking allocates
 * none per frame.
 */
export function createPoseScratch() {
  return { inverse: new Matrix4(), position: new Vector3(), quaternion: new Quaternion(), scale: new Vector3() };
}

/**
 * The camera pose relative to the marker: markerRoot's model-view matrix
 * (marker -> camera, in marker sides) inverted, its translation scaled to metres.
 * @param {Matrix4} modelView markerRoot.matrix
 * @param {number} metres marker side in metres
 * @param {ReturnType<typeof createPoseScratch>} [scratch]
 * @returns {Pose} x, y, z (metres), qx, qy, qz, qw
 */
export function cameraPoseInMarker(modelView, metres, scratch = createPoseScratch()) {
  const { inverse, position, quaternion, scale } = scratch;
  inverse.copy(modelView).invert();
  inverse.decompose(position, quaternion, scale);
  position.multiplyScalar(metres);
  return [position.x, position.y, position.z, quaternion.x, quaternion.y, quaternion.z, quaternion.w];
}

/**
 * The newest camera pose relative to the marker and when it was processed (`at`), with when
 * its frame was captured (`capturedAt`: the video frame's capture or presentation time where
 * the browser gives one, else `at`), and the tracked pose before it (`previous`): what
 * posePredictedAt extrapolates from.
 * @returns {{ pose: Pose | null, at: number, capturedAt: number, previous: { pose: Pose, capturedAt: number } | null }}
 */
export function createLatest() {
  return { pose: null, at: 0, capturedAt: 0, previous: null };
}

/** The sender's own motion is extrapolated at most this far past its newest frame, ms. */
export const SELF_PREDICT_MAX_MS = 200;
/** Two tracked frames further apart than this say nothing about the motion between them, ms. */
const SELF_PREDICT_SPAN_MS = 300;

/**
 * Where the camera is at `now`, from its two newest tracked frames: the newest pose carried on
 * along their motion for the time since its frame was captured (at most SELF_PREDICT_MAX_MS).
 * A phone's newest pose is a frame old when it is sent (capture, processing, the cycle's wait:
 * 100-160 ms on the synthetic camera, 3 cm at a walk); sending where it is now instead is what
 * lets a receiver draw it where it is. The newest pose alone when there is no motion to go on.
 * @param {ReturnType<typeof createLatest>} latest
 * @param {number} now performance.now()
 * @returns {Pose | null}
 */
export function posePredictedAt(latest, now) {
  const { pose, previous, capturedAt } = latest;
  if (!pose || !previous) return pose;
  const span = capturedAt - previous.capturedAt;
  if (span <= 0 || span > SELF_PREDICT_SPAN_MS) return pose;
  const ahead = Math.min(Math.max(0, now - capturedAt), SELF_PREDICT_MAX_MS);
  return extrapolate({ seq: 0, sendTime: previous.capturedAt, pose: previous.pose }, { seq: 1, sendTime: capturedAt, pose }, ahead);
}

/**
 * Makes ARToolKit estimate the next frame's marker pose from that frame alone.
 *
 * For a marker it saw in the frame before, ARToolKit refines the previous pose
 * (getTransMatSquareCont) instead of estimating a new one. After a gap in
 * processing (a page starved for a second: 13 video frames of motion) that
 * refinement diverged to a pose 100 km away, and from then on every frame
 * started from that pose and returned it unchanged: the same wrong position
 * in every frame, "detected", until the marker left the picture (seen in the
 * barcode test beside busy loops: 15 frames in a row at 128 km). An estimate
 * from each frame alone cannot carry an error from one frame to the next; on
 * the test videos it is as accurate (position within 1.3 %).
 * @param {Pick<import('@ar-js-org/ar.js/three.js/build/ar-threex.mjs').ArController, 'patternMarkers' | 'barcodeMarkers'> | null} controller
 */
export function forgetPreviousPoses(controller) {
  for (const markers of [controller?.patternMarkers, controller?.barcodeMarkers]) {
    for (const marker of Object.values(markers ?? {})) marker.inCurrent = false;
  }
}

/**
 * @typedef {object} FrameLoop what one processed frame reads and updates
 * @property {FrameTracker} tracker the current tracker (replaced when the picture changes shape)
 * @property {boolean} running false once stopped
 * @property {boolean} rebuilding a new tracker is being made: skip frames until it is
 * @property {TrackingStats} stats
 * @property {ReturnType<typeof createLatest>} latest
 */

/**
 * The per-frame work: hands the element's frame to AR.js, counts it, reads
 * the pose while the marker is visible and reports the frame.
 * @param {FrameLoop} loop
 * @param {HTMLVideoElement} element
 * @param {Pick<TrackingOptions, 'markerRoot' | 'markerSize' | 'probe' | 'onFrame'>} options
 * @returns {(capturedAt?: number) => void} processes the current frame (captured at `capturedAt`, performance.now()
 *   clock, where known); never throws (a bad frame is counted in stats.errors and logged once)
 */
export function createFrameStep(loop, element, options) {
  const scratch = createPoseScratch();
  /** @param {number | undefined} capturedAt */
  const process = (capturedAt) => {
    const begin = performance.now();
    const { context } = loop.tracker;
    if (!context.update(element)) return;
    forgetPreviousPoses(context.arController);
    const now = performance.now();
    const visible = Boolean(options.markerRoot.visible);
    countFrame(loop.stats, begin, now, visible);
    /** @type {FrameInfo} */
    const info = { t: now, visible, frame: -1, position: null, quaternion: null };
    if (visible) {
      const pose = cameraPoseInMarker(options.markerRoot.matrix, options.markerSize, scratch);
      const latest = loop.latest;
      latest.previous = latest.pose && latest.at > 0 ? { pose: latest.pose, capturedAt: latest.capturedAt } : null;
      latest.pose = pose;
      latest.at = now;
      latest.capturedAt = capturedAt ?? now;
      info.position = pose.slice(0, 3);
      info.quaternion = pose.slice(3);
    }
    if (options.probe && context.arController) {
      const band = context.arController.ctx.getImageData(0, loop.tracker.codeY, 20 * CODE_CELL, CODE_CELL);
      info.frame = readFrameCode(band.data, 20 * CODE_CELL, CODE_CELL / 2);
    }
    options.onFrame?.(info);
  };
  return (/** @type {number | undefined} */ capturedAt) => {
    if (loop.rebuilding) return;
    try {
      process(capturedAt);
    } catch (err) {
      // one bad frame must not stop tracking
      if (loop.stats.errors++ === 0) console.error('carlab: tracking a frame failed', err);
    }
  };
}

/**
 * Calls `step` once per new video frame (requestVideoFrameCallback), else on
 * animation frames whenever the video's time moved, until `loop.running` is false.
 * @param {Pick<HTMLVideoElement, 'currentTime'> & { requestVideoFrameCallback?: HTMLVideoElement['requestVideoFrameCallback'] }} element
 * @param {Pick<FrameLoop, 'running'>} loop
 * @param {(capturedAt?: number) => void} step
 * @param {(callback: () => void) => void} [nextAnimationFrame] requestAnimationFrame; replaceable for tests
 */
export function scheduleFrames(element, loop, step, nextAnimationFrame = (callback) => { requestAnimationFrame(callback); }) {
  if (typeof element.requestVideoFrameCallback === 'function') {
    const request = element.requestVideoFrameCallback.bind(element);
    const onVideoFrame = (/** @type {number} */ _now, /** @type {VideoFrameCallbackMetadata | undefined} */ metadata) => {
      if (!loop.running) return;
      // when the frame was taken (a camera's), else when it was ready to show
      step(metadata?.captureTime ?? metadata?.presentationTime);
      request(onVideoFrame);
    };
    request(onVideoFrame);
  } else {
    let lastTime = -1;
    const onAnimationFrame = () => {
      if (!loop.running) return;
      if (element.currentTime !== lastTime) {
        lastTime = element.currentTime;
        step();
      }
      nextAnimationFrame(onAnimationFrame);
    };
    nextAnimationFrame(onAnimationFrame);
  }
}

/**
 * Whether the picture changed shape (a phone turned between portrait and
 * landscape) so that a tracker for the new shape is needed.
 * @param {{ width: number, height: number }} size the picture's processing size now
 * @param {{ width: number, height: number }} camera the current tracker's camera
 */
export function shapeChanged(size, camera) {
  return Boolean(size.width) && (size.width !== camera.width || size.height !== camera.height);
}

/**
 * Starts the source and the tracker. Resolves once frames are being processed.
 * @param {TrackingOptions} options
 */
export async function startTracking(options) {
  const assets = options.assets ?? '/markers/';
  const { element, stopSource, syntheticStartEpoch } = await openSource(options.source);
  let tracker = await createTracker(element, options, assets);
  /** @type {FrameLoop} */
  const loop = { tracker, running: true, rebuilding: false, stats: createStats(), latest: createLatest() };

  // The picture changed shape: track it with a context and camera of the new shape.
  element.addEventListener('resize', async () => {
    if (!loop.running || loop.rebuilding || !shapeChanged(processingSize(element), tracker.camera)) return;
    loop.rebuilding = true;
    try {
      const old = tracker;
      tracker = await createTracker(element, options, assets);
      loop.tracker = tracker;
      old.dispose();
      options.onCamera?.(tracker.camera);
    } finally {
      loop.rebuilding = false;
    }
  });

  scheduleFrames(element, loop, createFrameStep(loop, element, options));

  return {
    element,
    /** The ideal camera of the processed picture. */
    get camera() { return tracker.camera; },
    get context() { return tracker.context; },
    get controls() { return tracker.controls; },
    stats: loop.stats,
    /** Newest camera pose relative to the marker. */
    latest: loop.latest,
    /** The synthetic video's first frame (ms since 1970): its truth's clock (synthetic.js syntheticTruthAt); null for a camera. */
    syntheticStartEpoch,
    /** Processed frames per second over the last second. */
    fps() {
      return framesPerSecond(loop.stats);
    },
    stop() {
      loop.running = false;
      tracker.dispose();
      stopSource();
    },
  };
}

/**
 * Opens the video source through AR.js and waits for its first frame.
 * @param {TrackingOptions['source']} source
 * @returns {Promise<{ element: HTMLVideoElement, stopSource: () => void, syntheticStartEpoch: number | null }>}
 *   `syntheticStartEpoch`: the synthetic video's first frame, ms since 1970 (null for other sources)
 */
async function openSource(source) {
  if (source.type === 'camera') {
    if (!window.isSecureContext) {
      throw new TrackingError('insecure', 'This page is not secure (plain http), so the browser blocks the camera. '
        + 'Open the https:// address and accept the certificate warning once.');
    }
    if (!navigator.mediaDevices?.getUserMedia) {
      throw new TrackingError('no-camera-api', 'This browser gives no camera access to web pages.');
    }
  }
  /** @type {(() => void) | null} */
  let stopSynthetic = null;
  /** @type {number | null} */
  let syntheticStartEpoch = null;
  const { ArToolkitSource } = await loadArjs();
  const arSource = new ArToolkitSource(source.type === 'camera'
    ? { sourceType: 'webcam', sourceWidth: 640, sourceHeight: 480 }
    : { sourceType: 'video', sourceUrl: source.type === 'video' ? source.url : '' });
  const ready = new Promise((resolve, reject) => {
    arSource.init(resolve, (/** @type {{ name?: string, message?: string }} */ err) => reject(cameraError(err)));
  });
  const element = /** @type {HTMLVideoElement} */ (arSource.domElement);
  if (!element) throw new TrackingError('no-camera-api', 'This browser gives no camera access to web pages.');
  element.setAttribute('playsinline', '');
  element.muted = true;
  if (source.type === 'synthetic') {
    const synthetic = syntheticStream();
    stopSynthetic = synthetic.stop;
    syntheticStartEpoch = synthetic.startEpoch;
    // AR.js's 'video' source, fed a MediaStream instead of a URL.
    element.removeAttribute('src');
    element.srcObject = synthetic.stream;
  }
  const failed = new Promise((_, reject) => {
    if (source.type === 'video') {
      element.addEventListener('error', () => reject(new TrackingError('source', `The video ${source.url} could not be played.`)), { once: true });
    }
  });
  await Promise.race([ready, failed]);
  if (!element.videoWidth) {
    await new Promise((resolve, reject) => {
      element.addEventListener('loadedmetadata', resolve, { once: true });
      element.addEventListener('error', () => reject(new TrackingError('source', 'The video could not be played.')), { once: true });
    });
  }
  element.play?.().catch(() => {});
  return {
    element,
    syntheticStartEpoch,
    stopSource() {
      stopSynthetic?.();
      arSource.dispose();
    },
  };
}

/**
 * Turns a getUserMedia failure into words a person can act on.
 * @param {{ name?: string, message?: string }} err
 */
function cameraError(err) {
  switch (err?.name) {
    case 'NotAllowedError':
    case 'SecurityError':
      return new TrackingError('camera-denied', 'Camera access was denied. Allow the camera for this site in the browser\'s '
        + 'site settings, then reload.');
    case 'NotFoundError':
    case 'OverconstrainedError':
      return new TrackingError('camera-missing', 'No camera was found on this device.');
    case 'NotReadableError':
    case 'AbortError':
      return new TrackingError('camera-busy', 'The camera is in use by another app. Close it, then reload.');
    default:
      return new TrackingError('source', `The camera could not be started: ${err?.message ?? err}`);
  }
}

/**
 * The synthetic test video (synthetic.js), drawn frame by frame on a canvas
 * at its frame rate and captured as a MediaStream.
 * @param {import('./synthetic.js').VideoSpec} [spec]
 */
export function syntheticStream(spec = DEFAULT_VIDEO) {
  const { width, height } = spec.camera;
  const canvas = document.createElement('canvas');
  canvas.width = width;
  canvas.height = height;
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d'));
  const image = ctx.createImageData(width, height);
  const t0 = performance.now();
  let shown = -1;
  const draw = () => {
    const frame = Math.floor(((performance.now() - t0) / 1000) * spec.fps);
    if (frame === shown) return;
    shown = frame;
    renderFrame(frame % spec.frames, spec, image.data);
    ctx.putImageData(image, 0, 0);
  };
  draw();
  const timer = setInterval(draw, 1000 / spec.fps / 4);
  const stream = canvas.captureStream(spec.fps);
  return {
    stream,
    canvas,
    /** When frame 0 was drawn, ms since 1970: frame i is shown from startEpoch + i / fps s on. */
    startEpoch: performance.timeOrigin + t0,
    stop() {
      clearInterval(timer);
      for (const track of stream.getTracks()) track.stop();
    },
  };
}
