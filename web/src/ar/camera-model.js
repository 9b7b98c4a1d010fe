// The one camera model of carlab: an ideal pinhole camera (no lens
// distortion). The same numbers feed the ARToolKit camera-parameter file
// (camera_para.dat), the synthetic video that tests tracking, and the
// three.js projection that draws the scene over the video.
// Runs in the browser and in Node: no DOM, no Node built-ins.
//
// Conventions:
// - pixel (i, j) is the pixel in column i, row j; its centre has image
//   coordinates (u, v) = (i, j), so the image spans [-0.5, w - 0.5];
// - ARToolKit camera frame: x right, y down, z forward (into the scene);
//   u = fx * x / z + cx, v = fy * y / z + cy;
// - GL/three.js camera frame: x right, y up, looking down -z; a GL point
//   (X, Y, Z) is the ARToolKit point (X, -Y, -Z).

/**
 * @typedef {object} Intrinsics
 * @property {number} width  image width in pixels
 * @property {number} height image height in pixels
 * @property {number} fx focal length in pixels, horizontal
 * @property {number} fy focal length in pixels, vertical
 * @property {number} cx principal point, pixel coordinates
 * @property {number} cy
 */

/** Focal length as a fraction of the long image side: ~60 deg across it, like a phone's main camera. */
export const FOCAL_PER_LONG_SIDE = 0.875;

/**
 * The ideal camera for an image size: square pixels, the principal point at
 * the image centre, focal length FOCAL_PER_LONG_SIDE x the long side.
 * @param {number} [width] default 640
 * @param {number} [height] default 480
 * @returns {Intrinsics}
 */
export function idealCamera(width = 640, height = 480) {
  const f = FOCAL_PER_LONG_SIDE * Math.max(width, height);
  return { width, height, fx: f, fy: f, cx: (width - 1) / 2, cy: (height - 1) / 2 };
}

/** The camera of `carlab markers` and `carlab video`: 640x480, f = 560 px. */
export const IDEAL_CAMERA = Object.freeze(idealCamera(640, 480));

/** Size of a camera_para.dat with dist_factor[9] (ARToolKit distortion function version 4). */
export const CAMERA_PARA_BYTES = 176;

/**
 * ARToolKit's camera-parameter file (ARParam, distortion function
 * version 4), big-endian: int32 xsize, int32 ysize, float64 mat[3][4],
 * float64 dist_factor[9] = k1, k2, p1, p2, fx, fy, cx, cy, s.
 * Ideal camera: no distortion (k = p = 0) and scale s = 1.
 * @param {Intrinsics} cam
 * @returns {Uint8Array} 176 bytes
 */
export function encodeCameraPara(cam) {
  const bytes = new Uint8Array(CAMERA_PARA_BYTES);
  const view = new DataView(bytes.buffer);
  view.setInt32(0, cam.width);
  view.setInt32(4, cam.height);
  const mat = [
    cam.fx, 0, cam.cx, 0,
    0, cam.fy, cam.cy, 0,
    0, 0, 1, 0,
  ];
  const dist = [0, 0, 0, 0, cam.fx, cam.fy, cam.cx, cam.cy, 1];
  [...mat, ...dist].forEach((value, i) => view.setFloat64(8 + 8 * i, value));
  return bytes;
}

/**
 * Reads a camera_para.dat written by {@link encodeCameraPara} (or any
 * 176-byte version-4 file).
 * @param {Uint8Array} bytes
 * @returns {Intrinsics & { mat: number[], dist: number[] }}
 */
export function decodeCameraPara(bytes) {
  if (bytes.length !== CAMERA_PARA_BYTES) {
    throw new Error(`camera_para: expected ${CAMERA_PARA_BYTES} bytes, got ${bytes.length}`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const mat = Array.from({ length: 12 }, (_, i) => view.getFloat64(8 + 8 * i));
  const dist = Array.from({ length: 9 }, (_, i) => view.getFloat64(104 + 8 * i));
  return {
    width: view.getInt32(0), height: view.getInt32(4),
    fx: mat[0], fy: mat[5], cx: mat[2], cy: mat[6], mat, dist,
  };
}

/**
 * Projects a point given in the ARToolKit camera frame to pixel coordinates.
 * @param {Intrinsics} cam
 * @param {[number, number, number]} p
 * @returns {[number, number] | null} null behind the camera
 */
export function projectPoint(cam, [x, y, z]) {
  if (z <= 1e-9) return null;
  return [cam.fx * x / z + cam.cx, cam.fy * y / z + cam.cy];
}

/**
 * The OpenGL projection matrix (column-major, as three.js Matrix4.elements)
 * of the camera for a GL camera frame, so that a point drawn by three.js
 * lands on the same pixel as the camera saw it.
 * `scaleX`/`scaleY` stretch the result when the video is shown cropped
 * ("object-fit: cover"): the ratio of the displayed video size to the
 * viewport size along each axis (>= 1 on the cropped axis).
 * @param {Intrinsics} cam
 * @param {{ near?: number, far?: number, scaleX?: number, scaleY?: number }} [opts]
 * @returns {number[]} 16 numbers, column-major
 */
export function projectionMatrixGL(cam, { near = 0.01, far = 100, scaleX = 1, scaleY = 1 } = {}) {
  const { width: w, height: h } = cam;
  // ndc_x = 2 (u + 0.5) / w - 1,  ndc_y = 1 - 2 (v + 0.5) / h
  const a = (2 * cam.fx / w) * scaleX;
  const b = (1 - 2 * (cam.cx + 0.5) / w) * scaleX; // multiplies Z (clip w = -Z)
  const c = (2 * cam.fy / h) * scaleY;
  const d = (2 * (cam.cy + 0.5) / h - 1) * scaleY;
  const zz = -(far + near) / (far - near);
  const zw = -2 * far * near / (far - near);
  // rows: [a 0 b 0] [0 c d 0] [0 0 zz zw] [0 0 -1 0]
  return [
    a, 0, 0, 0,
    0, c, 0, 0,
    b, d, zz, -1,
    0, 0, zw, 0,
  ];
}

/**
 * How a video of `videoW` x `videoH` shown with "object-fit: cover" in a
 * `viewW` x `viewH` viewport overflows it on each axis (>= 1).
 * @param {number} videoW @param {number} videoH @param {number} viewW @param {number} viewH
 */
export function coverScale(videoW, videoH, viewW, viewH) {
  const s = Math.max(viewW / videoW, viewH / videoH);
  return { scaleX: (videoW * s) / viewW, scaleY: (videoH * s) / viewH };
}
