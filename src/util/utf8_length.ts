/**
 * The UTF-8 length of a string without encoding it: what the size checks
 * of a plan's descriptors and pages, and of every store write, need. A
 * leader planning a million splits measured each descriptor and each page
 * entry through `TextEncoder.encode`, a typed array per split that did
 * nothing but raise the process's high-water mark of memory.
 *
 * @module
 */

/**
 * The number of bytes `TextEncoder` would encode `s` into: 1 per code
 * unit below U+0080, 2 below U+0800, 4 per surrogate pair, 3 for any
 * other unit (a lone surrogate becomes U+FFFD, 3 bytes).
 *
 * @example
 * ```ts
 * import { utf8Length } from "./utf8_length.ts";
 * utf8Length("abc"); // 3
 * utf8Length("é€😀"); // 2 + 3 + 4 = 9
 * ```
 */
export function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 2; // a pair: 2 units, 4 bytes
        i++;
      } else n += 2;
    } else n += 2;
  }
  return n;
}
