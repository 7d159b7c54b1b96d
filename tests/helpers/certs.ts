/**
 * Test certificates: a CA and a server certificate for localhost and
 * 127.0.0.1, made with openssl.
 *
 * @module
 */
import { runCmd } from "./cmd.ts";

/** Makes `<dir>/tls/{ca.crt,ca.key,tls.crt,tls.key}`: a CA and a server certificate signed by it. */
export async function makeCertificates(dir: string): Promise<void> {
  await Deno.mkdir(`${dir}/tls`);
  const t = `${dir}/tls`;
  const ssl = (args: string[]) => runCmd("openssl", args, { what: `openssl ${args[0]}`, timeoutMs: 30_000 });
  await ssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", `${t}/ca.key`, "-out", `${t}/ca.crt`, "-days", "1", "-subj", "/CN=splitlease test CA"]);
  await ssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", `${t}/tls.key`, "-out", `${t}/tls.csr`, "-subj", "/CN=localhost"]);
  await Deno.writeTextFile(`${t}/ext.cnf`, "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n");
  await ssl(["x509", "-req", "-in", `${t}/tls.csr`, "-CA", `${t}/ca.crt`, "-CAkey", `${t}/ca.key`, "-CAcreateserial", "-out", `${t}/tls.crt`, "-days", "1", "-extfile", `${t}/ext.cnf`]);
}
