// qrcode-terminal 0.12 ships no types and @types/qrcode-terminal would be one
// more devDependency for one call: declare the part server/start.js uses.
// Referenced from start.js, since tsconfig includes server/*.js only.
declare module 'qrcode-terminal' {
  interface QrcodeTerminal {
    /** Render `input` as a QR code of text; `small` uses half-height blocks. */
    generate(input: string, options: { small?: boolean }, callback: (code: string) => void): void;
    generate(input: string, callback?: (code: string) => void): void;
    /** Error correction level of the codes that follow. */
    setErrorLevel(level: 'L' | 'M' | 'Q' | 'H'): void;
  }
  const qrcode: QrcodeTerminal;
  export default qrcode;
}
