/**
 * Interned strings of the fleet index's columns (`split_columns.ts`): an
 * owner or a completer kept as an index a slot, its name once.
 *
 * @module
 */

/** Interned strings (owners as `instance/session`, completers as instances). */
export class Names {
  readonly list: string[] = [];
  readonly #index = new Map<string, number>();
  of(name: string | null): number {
    if (name === null) return -1;
    let i = this.#index.get(name);
    if (i === undefined) this.#index.set(name, (i = this.list.push(name) - 1));
    return i;
  }
  name(i: number): string | null {
    return i < 0 ? null : this.list[i];
  }
}
