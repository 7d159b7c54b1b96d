// Reads a child process's output stream line by line (the shared part of
// every test that spawns workers and parses their JSON log lines).

/** Calls `onLine` for each complete line of `s`, then once for a trailing partial line. */
export async function eachLine(s: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  let buf = "";
  for await (const chunk of s.pipeThrough(new TextDecoderStream())) {
    buf += chunk;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      onLine(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  }
  if (buf) onLine(buf);
}

/** A JSON log line as an object, or `undefined` for anything else. */
export function parseLogLine(line: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(line);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}
