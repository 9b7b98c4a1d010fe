// Types for the one call of the `qrcode` package (it ships none) that
// landing.js makes.

declare module 'qrcode' {
  interface ToStringOptions {
    type?: 'svg' | 'utf8' | 'terminal';
    margin?: number;
    errorCorrectionLevel?: 'L' | 'M' | 'Q' | 'H';
  }
  const QRCode: {
    /** The code for `text`, as SVG markup with type 'svg'. */
    toString(text: string, options?: ToStringOptions): Promise<string>;
  };
  export default QRCode;
}
