// A real OpenID provider (the `oidc-provider` package, pinned in
// package.json) on loopback, for the OAuth end-to-end tests: one
// confidential client with the client-credentials grant, resource
// indicators (RFC 8707) so that access tokens are JWTs whose `aud` is the
// resource asked for, signed with a fresh key: ES256 by default, or RS256
// (a 2048-bit key, the default of most identity providers).
//
//   node oidc.mjs <resource> <client secret> <scopes> [ES256|RS256]
//
// Listens on a port the kernel picks (so no other process can take it
// between a choice and the bind), names its issuer after it, and prints
// `listening <issuer>` once it serves; stops when stdin closes (the test
// that started it went away) or on SIGTERM.

import { createServer } from "node:http";
import Provider from "oidc-provider";
import { exportJWK, generateKeyPair } from "jose";

const [resource, secret, scopes, alg = "ES256"] = process.argv.slice(2);
if (!resource || !secret || !scopes || !["ES256", "RS256"].includes(alg)) {
  process.stderr.write("usage: oidc.mjs <resource> <client secret> <scopes> [ES256|RS256]\n");
  process.exit(2);
}

// Bound first; requests wait for the provider, made once the port is known.
let handle = (_req, res) => {
  res.statusCode = 503;
  res.end();
};
const server = createServer((req, res) => handle(req, res));
await new Promise((resolve, reject) => {
  server.once("error", reject);
  server.listen(0, "127.0.0.1", resolve);
});
const issuer = `http://127.0.0.1:${server.address().port}`;

const { privateKey } = await generateKeyPair(alg, { extractable: true, modulusLength: 2048 });
const signing = { ...(await exportJWK(privateKey)), kid: "oidc-test-1", alg, use: "sig" };

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: "mcp-test",
      client_secret: secret,
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: "client_secret_basic",
      id_token_signed_response_alg: alg,
    },
  ],
  scopes: scopes.split(" "),
  jwks: { keys: [signing] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, indicator) => {
        if (indicator !== resource && !indicator.startsWith("http://127.0.0.1:")) {
          throw new Error("unknown resource");
        }
        return {
          scope: scopes,
          audience: indicator,
          accessTokenTTL: 300,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg } },
        };
      },
    },
  },
});

handle = provider.callback();
process.stdout.write(`listening ${issuer}\n`);
const stop = () => server.close(() => process.exit(0));
process.stdin.on("end", stop);
process.stdin.resume();
process.on("SIGTERM", stop);
