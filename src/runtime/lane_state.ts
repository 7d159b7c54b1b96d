/**
 * Where a lane stands, as one value, and the only functions that move it.
 * A lane waits for a slot (`queued`), runs (`running`), may have its intake
 * stopped (`revoking`) or its revocation declined (`declined`), ends its run
 * (`ending`: the last flush before the release), and stops writing for good
 * (`closed`: completed, failed or ended) or is taken from it (`lost`, then
 * `abandoned` if it ignores its abort). What `Worker.lanes()` shows is
 * derived ({@linkcode shownState}).
 *
 * | from | to |
 * |---|---|
 * | queued | running (a slot is free), closed ended (revoked before it started), lost |
 * | running | revoking (revoked, or a cut that cannot be written), declined (revoked, the source cannot stop intake), ending, closed, lost |
 * | revoking | ending, closed, lost |
 * | declined, ending | closed, lost |
 * | closed completed | the state it closed from (the final write met an outage: the source may retry), lost |
 * | closed failed, closed ended | lost (its write was fenced; a shutdown or quarantine) |
 * | lost | abandoned (it ignored its abort past the grace period) |
 *
 * Each function applies its transition only from the states the table
 * names, and says whether it did.
 *
 * @module
 */

/** A lane that has started and may still write. */
export type OpenLaneState =
  /** `run` is going; `cutting` while a cut of its remaining work is answered (one at a time). */
  | { readonly kind: "running"; readonly cutting: boolean }
  /** Intake stopped (a revocation, or a cut that could not be written): `run` commits what it did and returns; then the split is released. */
  | { readonly kind: "revoking" }
  /** The source cannot stop intake: the revocation was declined and the coordinator releases the split forcibly; the last flush lands or is fenced. */
  | { readonly kind: "declined" }
  /** `run` returned (or stopped on a store outage): the last progress is flushed, then the split released. */
  | { readonly kind: "ending" };

/** A lane waiting for a free slot: nothing ran, nothing was written. */
export type QueuedLaneState = { readonly kind: "queued" };

/** How a lane stopped writing: a terminal write (in flight or landed), or an end without one (a release). */
export type LaneEnd = "completed" | "failed" | "ended";

/** Where one lane stands. */
export type LaneState =
  | QueuedLaneState
  | OpenLaneState
  /** No more writes; `was` is where it stood when it closed (shown until it settles; returned to if a final write meets an outage). */
  | { readonly kind: "closed"; readonly end: LaneEnd; readonly was: OpenLaneState }
  /** Revoked before it started: it never ran, so it only ends. */
  | { readonly kind: "closed"; readonly end: "ended"; readonly was: QueuedLaneState }
  /** Fenced, expired, revoked away, quarantined or shut down: aborted, its writes refused. */
  | { readonly kind: "lost" }
  /** Lost, and it ignored its abort past the grace period: its slot is freed while `run` goes on. */
  | { readonly kind: "abandoned" };

/** What holds a lane's state (the worker's lane). */
export interface HasLaneState {
  state: LaneState;
}

/** The state a new lane starts in. */
export const QUEUED: QueuedLaneState = Object.freeze({ kind: "queued" });

const OPEN_KINDS: readonly OpenLaneState["kind"][] = ["running", "revoking", "declined", "ending"];

function isOpen(s: LaneState): s is OpenLaneState {
  return (OPEN_KINDS as readonly string[]).includes(s.kind);
}

/** What `Worker.lanes()` shows for a lane in `s`. */
export function shownState(s: LaneState): "queued" | "running" | "revoking" | "stopping" {
  switch (s.kind) {
    case "queued":
    case "running":
    case "revoking":
      return s.kind;
    case "closed":
      return shownState(s.was);
    default:
      return "stopping";
  }
}

/** Whether the lane still takes writes (it has not closed and was not lost). */
export function writable(s: LaneState): boolean {
  return s.kind === "queued" || isOpen(s);
}

/** Whether the lane was lost (abandoned included). */
export function isLost(s: LaneState): boolean {
  return s.kind === "lost" || s.kind === "abandoned";
}

/** Whether the lane closed with a terminal write (completed or failed, in flight or landed). */
export function isTerminal(s: LaneState): boolean {
  return s.kind === "closed" && s.end !== "ended";
}

/** Why a lane takes no more writes (for the error its handle throws). */
export function endedAs(s: LaneState): LaneEnd | "lost" {
  return s.kind === "closed" ? s.end : "lost";
}

/** Whether the lane may start answering a cut: running, with no cut in flight. */
export function canCut(s: LaneState): boolean {
  return s.kind === "running" && !s.cutting;
}

type Kind = LaneState["kind"];

const LOSABLE: readonly Kind[] = ["queued", ...OPEN_KINDS, "closed"];

/** Moves `lane` to `to` if it stands in one of `from`; says whether it did. */
function move(lane: HasLaneState, from: readonly Kind[], to: LaneState): boolean {
  if (!from.includes(lane.state.kind)) return false;
  lane.state = to;
  return true;
}

/** queued → running: a slot is free. */
export function start(lane: HasLaneState): boolean {
  return move(lane, ["queued"], { kind: "running", cutting: false });
}

/** running → revoking: its intake stops (the caller aborts its revoke signal). */
export function stopIntake(lane: HasLaneState): boolean {
  return move(lane, ["running"], { kind: "revoking" });
}

/** running → declined: the source cannot stop intake, so the revocation was declined. */
export function decline(lane: HasLaneState): boolean {
  return move(lane, ["running"], { kind: "declined" });
}

/** running or revoking → ending: `run` returned, or stopped on a store outage. */
export function beginEnding(lane: HasLaneState): boolean {
  return move(lane, ["running", "revoking"], { kind: "ending" });
}

/** queued or open → closed: no more writes (a queued lane only ends, it never completes). */
export function close(lane: HasLaneState, end: LaneEnd): boolean {
  const s = lane.state;
  if (isOpen(s)) lane.state = { kind: "closed", end, was: s };
  else if (s.kind === "queued" && end === "ended") lane.state = { kind: "closed", end, was: s };
  else return false;
  return true;
}

/** closed completed → the state it closed from: the final write met an outage, and the source may try again. */
export function reopen(lane: HasLaneState): boolean {
  const s = lane.state;
  if (s.kind !== "closed" || s.end !== "completed") return false;
  lane.state = s.was;
  return true;
}

/** Anything but lost → lost. */
export function lose(lane: HasLaneState): boolean {
  return move(lane, LOSABLE, { kind: "lost" });
}

/** lost → abandoned: it ignored its abort past the grace period. */
export function abandon(lane: HasLaneState): boolean {
  return move(lane, ["lost"], { kind: "abandoned" });
}

/**
 * A cut of a running lane's remaining work is being answered, or was
 * answered: while one is, no other starts (see {@linkcode canCut}). A lane
 * that closed while running keeps the mark for the state it may reopen to.
 */
export function setCutting(lane: HasLaneState, cutting: boolean): void {
  const s = lane.state;
  if (s.kind === "running") lane.state = { kind: "running", cutting };
  else if (s.kind === "closed" && s.was.kind === "running") lane.state = { ...s, was: { kind: "running", cutting } };
}
