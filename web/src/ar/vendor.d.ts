// Types for the libraries the AR view uses that ship none: three.js (no
// bundled types; @types/three is not a dependency, so its imports stay
// untyped, as they always were) and the parts of AR.js's THREEx build that
// tracking.js calls.

declare module 'three';

declare module '@ar-js-org/ar.js/three.js/build/ar-threex.mjs' {
  /** ARToolKit's controller, once the context is initialised: it reads each frame from `canvas` through `ctx`. */
  /** One tracked marker's state in ARToolKit's controller (jsartoolkit5). */
  export interface TrackedMarker {
    /** seen in the frame before this one: the pose is then refined from the previous one */
    inPrevious: boolean;
    /** seen in this frame */
    inCurrent: boolean;
  }

  export interface ArController {
    canvas: HTMLCanvasElement;
    ctx: CanvasRenderingContext2D;
    patternMarkers?: Record<string, TrackedMarker>;
    barcodeMarkers?: Record<string, TrackedMarker>;
  }

  export interface ArToolkitContextParameters {
    cameraParametersUrl: string | Uint8Array;
    detectionMode: 'mono' | 'mono_and_matrix' | 'color' | 'color_and_matrix';
    matrixCodeType: '3x3' | '3x3_HAMMING63' | '3x3_PARITY65' | '4x4' | '4x4_BCH_13_9_3' | '4x4_BCH_13_5_5';
    canvasWidth: number;
    canvasHeight: number;
    patternRatio: number;
    maxDetectionRate: number;
    imageSmoothingEnabled: boolean;
  }

  export class ArToolkitContext {
    constructor(parameters: Partial<ArToolkitContextParameters>);
    /** null until init's callback ran */
    arController: ArController | null;
    /** onCompleted is called without arguments (a Promise's resolve fits) */
    init(onCompleted: (value?: unknown) => void): void;
    /** Processes the element's current frame; false when it was skipped (not ready, or too soon). */
    update(srcElement: HTMLVideoElement | HTMLImageElement): boolean;
    dispose(): void;
  }

  export type ArMarkerControlsParameters =
    | { type: 'pattern', patternUrl: string, size: number, changeMatrixMode: 'modelViewMatrix' | 'cameraTransformMatrix' }
    | { type: 'barcode', barcodeValue: number, size: number, changeMatrixMode: 'modelViewMatrix' | 'cameraTransformMatrix' };

  export class ArMarkerControls {
    /** object3d: the three.js object AR.js moves onto the marker */
    constructor(context: ArToolkitContext, object3d: object, parameters: ArMarkerControlsParameters);
  }

  export type ArToolkitSourceParameters =
    | { sourceType: 'webcam', sourceWidth: number, sourceHeight: number }
    | { sourceType: 'video' | 'image', sourceUrl: string };

  export class ArToolkitSource {
    constructor(parameters: ArToolkitSourceParameters);
    /** the video (or image) element; set by the constructor's init call */
    domElement: HTMLVideoElement | HTMLImageElement | null;
    /** onReady is called without arguments (a Promise's resolve fits) */
    init(onReady: (value?: unknown) => void, onError: (error: { name?: string, message?: string }) => void): void;
    dispose(): void;
  }
}
