/**
 * The membership signature of a leader's pass: which members take work,
 * under which plan generation. A steal planned under one signature is
 * withdrawn under another (the move may no longer be wanted).
 *
 * @module
 */
import type { MemberState } from "./member_state.ts";

/**
 * Computes the signature, sorted, only when a cheap fingerprint of the
 * claimers (count and a sum of key hashes) or the generation changes: it is
 * asked for on every pass, one per watch event. A fingerprint collision can
 * only keep a steal that balancing would have re-planned.
 */
export class MembershipSignature {
  #count = -1;
  #sum = 0;
  #generation = -1;
  #value = "";

  /** The signature of the members in `states` that take work, at `generation`. */
  of(states: ReadonlyMap<string, MemberState>, generation: number): string {
    let count = 0, sum = 0;
    for (const m of states.values()) {
      if (m.draining || m.maxInFlight === 0) continue;
      count++;
      sum = (sum + m.keyHash) % Number.MAX_SAFE_INTEGER;
    }
    if (count === this.#count && sum === this.#sum && generation === this.#generation) return this.#value;
    const parts: string[] = [];
    for (const m of states.values()) if (!m.draining && m.maxInFlight > 0) parts.push(m.instance + ":" + m.session);
    this.#count = count;
    this.#sum = sum;
    this.#generation = generation;
    this.#value = parts.sort().join(",") + "#" + generation;
    return this.#value;
  }
}
