// utf8Length: the size checks of descriptors, pages and store writes measure strings without encoding them.
import assert from "node:assert/strict";
import fc from "fast-check";
import { utf8Length } from "../../src/util/utf8_length.ts";

const encoder = new TextEncoder();

Deno.test("utf8Length: what TextEncoder encodes, for any string (lone surrogates, pairs, every plane)", () => {
  // Strings of arbitrary UTF-16 code units: lone and swapped surrogates included.
  const units = fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 40 }).map((cs) => String.fromCharCode(...cs));
  fc.assert(fc.property(fc.oneof(units, fc.string({ unit: "binary" }), fc.string()), (s) => {
    assert.equal(utf8Length(s), encoder.encode(s).byteLength);
  }), { numRuns: 2000 });
});

Deno.test("utf8Length: boundary code points", () => {
  for (const s of ["", "\u007f", "\u0080", "\u07ff", "\u0800", "\uffff", "\ud800", "\udfff", "\ud83d\ude00", "\ude00\ud83d", "a\ud800"]) {
    assert.equal(utf8Length(s), encoder.encode(s).byteLength, JSON.stringify(s));
  }
});
