// The part of cli-progress 3.12 that lab/progress.js uses: the package ships no
// types (referenced from lab/progress.js; drop this if @types/cli-progress is added).
declare module 'cli-progress' {
  interface Options {
    format?: string;
    barsize?: number;
    hideCursor?: boolean;
    stream?: NodeJS.WritableStream;
    etaBuffer?: number;
  }
  interface Preset {
    format?: string;
    barCompleteChar?: string;
    barIncompleteChar?: string;
  }
  class SingleBar {
    constructor(options: Options, preset?: Preset);
    start(total: number, startValue: number, payload?: Record<string, unknown>): void;
    update(current: number, payload?: Record<string, unknown>): void;
    stop(): void;
  }
  const cliProgress: {
    SingleBar: typeof SingleBar;
    Presets: { legacy: Preset; rect: Preset; shades_classic: Preset; shades_grey: Preset };
  };
  export default cliProgress;
}
