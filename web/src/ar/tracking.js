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

import { ArMarkerControls, ArToolkitContext, ArToolkitSource } from '@ar-js-org/ar.js/three.js/build/ar-threex.mjs';
import { Matrix4, Quaternion, Vector3 } from 'three';

import { encodeCameraPara, idealCamera } from './camera-model.js';
import { PATTERN_RATIO } from './marker-pattern.js';
import { CODE_CELL, DEFAULT_VIDEO, frameCodeOrigin, readFrameCode, renderFrame } from './synthetic.js';

/**
 * @typedef {object} TrackingOptions
 * @property {{ type: 'camera' } | { type: 'video', url: string } | { type: 'synthetic' }} source
 * @property {import('./marker-pattern.js').MarkerKind} marker
 * @property {number} markerSize marker side in metres
 * @property {any} markerRoot three.js Group that AR.js moves onto the marker (its unit: one marker side)
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
 * An AR.js context and marker controls for one picture size.
 * @param {HTMLVideoElement} element
 * @param {TrackingOptions} options
 * @param {string} assets
 */
async function createTracker(element, options, assets) {
  const { width, height } = processingSize(element);
  const camera = idealCamera(width, height);
  /** @type {string | Uint8Array} */
  let cameraParameters = encodeCameraPara(camera);
  if (width === 640 && height === 480) cameraParameters = `${assets}camera_para.dat`;

  const context = new ArToolkitContext({
    cameraParametersUrl: cameraParameters,
    detectionMode: options.marker.type === 'barcode' ? 'mono_and_matrix' : 'mono',
    matrixCodeType: '3x3',
    canvasWidth: width,
    canvasHeight: height,
    patternRatio: PATTERN_RATIO,
    maxDetectionRate: 60,
    imageSmoothingEnabled: true,
  });
  await new Promise((resolve) => context.init(resolve));
  // AR.js reads every frame back from its 2D canvas (getImageData): keep that
  // canvas in CPU memory, or a GPU-backed one stalls on every read.
  const ar = context.arController;
  const processingCanvas = document.createElement('canvas');
  processingCanvas.width = width;
  processingCanvas.height = height;
  const processingCtx = processingCanvas.getContext('2d', { willReadFrequently: true });
  if (processingCtx) {
    processingCtx.imageSmoothingEnabled = ar.ctx.imageSmoothingEnabled;
    ar.canvas = processingCanvas;
    ar.ctx = processingCtx;
  }
  // ARToolKit's pose estimate fails (icpGetInitXw2Xc) for tiny marker
  // widths such as 0.16: it works in marker sides (width 1) and we scale to
  // metres ourselves. markerRoot's matrix is therefore in marker sides.
  const controls = new ArMarkerControls(context, options.markerRoot, options.marker.type === 'barcode'
    ? { type: 'barcode', barcodeValue: options.marker.value, size: 1, changeMatrixMode: 'modelViewMatrix' }
    : { type: 'pattern', patternUrl: `${assets}carlab.patt`, size: 1, changeMatrixMode: 'modelViewMatrix' });
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
 * Starts the source and the tracker. Resolves once frames are being processed.
 * @param {TrackingOptions} options
 */
export async function startTracking(options) {
  const assets = options.assets ?? '/markers/';
  const { element, stopSource } = await openSource(options.source);
  let tracker = await createTracker(element, options, assets);
  const metres = options.markerSize;

  const stats = {
    processed: 0,
    detected: 0,
    startedAt: performance.now(),
    /** @type {number | null} */
    lastSeenAt: null,
    /** smoothed time AR.js takes per frame, ms */
    processMs: 0,
    /** processing times of the last second, for frames per second */
    recent: /** @type {number[]} */ ([]),
    /** frames whose processing threw */
    errors: 0,
  };
  /** Newest camera pose relative to the marker. */
  const latest = {
    /** @type {[number, number, number, number, number, number, number] | null} */
    pose: null,
    at: 0,
  };
  const inverse = new Matrix4();
  const position = new Vector3();
  const quaternion = new Quaternion();
  const scale = new Vector3();
  let running = true;
  let rebuilding = false;

  // The picture changed shape (a phone turned between portrait and
  // landscape): track it with a context and camera of the new shape.
  element.addEventListener('resize', async () => {
    const size = processingSize(element);
    if (!running || rebuilding || !size.width || (size.width === tracker.camera.width && size.height === tracker.camera.height)) return;
    rebuilding = true;
    try {
      const old = tracker;
      tracker = await createTracker(element, options, assets);
      old.dispose();
      options.onCamera?.(tracker.camera);
    } finally {
      rebuilding = false;
    }
  });

  const process = () => {
    const begin = performance.now();
    const { context } = tracker;
    if (!context.update(element)) return;
    const now = performance.now();
    stats.processMs = stats.processMs ? 0.9 * stats.processMs + 0.1 * (now - begin) : now - begin;
    const visible = Boolean(options.markerRoot.visible);
    stats.processed++;
    stats.recent.push(now);
    while (stats.recent.length && now - stats.recent[0] > 1000) stats.recent.shift();
    /** @type {FrameInfo} */
    const info = { t: now, visible, frame: -1, position: null, quaternion: null };
    if (visible) {
      stats.detected++;
      stats.lastSeenAt = now;
      inverse.copy(options.markerRoot.matrix).invert();
      inverse.decompose(position, quaternion, scale);
      position.multiplyScalar(metres);
      latest.pose = [position.x, position.y, position.z, quaternion.x, quaternion.y, quaternion.z, quaternion.w];
      latest.at = now;
      info.position = [position.x, position.y, position.z];
      info.quaternion = [quaternion.x, quaternion.y, quaternion.z, quaternion.w];
    }
    if (options.probe && context.arController) {
      const band = context.arController.ctx.getImageData(0, tracker.codeY, 20 * CODE_CELL, CODE_CELL);
      info.frame = readFrameCode(band.data, 20 * CODE_CELL, CODE_CELL / 2);
    }
    options.onFrame?.(info);
  };
  const safeProcess = () => {
    if (rebuilding) return;
    try {
      process();
    } catch (err) {
      // one bad frame must not stop tracking
      if (stats.errors++ === 0) console.error('carlab: tracking a frame failed', err);
    }
  };

  // Process each new video frame once (requestVideoFrameCallback), else poll on animation frames.
  const video = /** @type {any} */ (element);
  if (typeof video.requestVideoFrameCallback === 'function') {
    const onVideoFrame = () => {
      if (!running) return;
      safeProcess();
      video.requestVideoFrameCallback(onVideoFrame);
    };
    video.requestVideoFrameCallback(onVideoFrame);
  } else {
    let lastTime = -1;
    const onAnimationFrame = () => {
      if (!running) return;
      if (element.currentTime !== lastTime) {
        lastTime = element.currentTime;
        safeProcess();
      }
      requestAnimationFrame(onAnimationFrame);
    };
    requestAnimationFrame(onAnimationFrame);
  }

  return {
    element,
    /** The ideal camera of the processed picture. */
    get camera() { return tracker.camera; },
    get context() { return tracker.context; },
    get controls() { return tracker.controls; },
    stats,
    latest,
    /** Processed frames per second over the last second. */
    fps() {
      return stats.recent.length > 1 ? (1000 * (stats.recent.length - 1)) / (stats.recent.at(-1) - stats.recent[0]) : 0;
    },
    stop() {
      running = false;
      tracker.dispose();
      stopSource();
    },
  };
}

/**
 * Opens the video source through AR.js and waits for its first frame.
 * @param {TrackingOptions['source']} source
 * @returns {Promise<{ element: HTMLVideoElement, stopSource: () => void }>}
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
    stop() {
      clearInterval(timer);
      for (const track of stream.getTracks()) track.stop();
    },
  };
}
