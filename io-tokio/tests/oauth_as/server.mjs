// A real OAuth 2.1 authorization server for io-tokio/tests/oauth.rs: oidc-provider on a
// loopback port, issuing RFC 9068 JWT access tokens (typ at+jwt, RS256) audience-restricted
// to the resource named by the RFC 8707 `resource` parameter, with the client credentials
// grant, token introspection (RFC 7662) and revocation (RFC 7009).
//
//   node server.mjs RESOURCE OTHER_RESOURCE OPAQUE_RESOURCE [--tls]
//
// With --tls it serves HTTPS (issuer https://127.0.0.1:PORT) with the test certificate in
// tls/ (signed by tls/ca.pem, which the test trusts).
// RESOURCE and OTHER_RESOURCE get JWT access tokens, OPAQUE_RESOURCE opaque ones (for
// introspection). Prints one line of JSON, {"issuer": "http://127.0.0.1:PORT"}, once it
// listens, and exits when its standard input ends (the test went away).
//
// Clients (all client_secret_basic, secret "secret-" + id, client credentials only):
//   good     tokens as the AS makes them;
//   expired  tokens whose exp is an hour before their iat;
//   early    tokens with an nbf an hour ahead;
//   foreign  tokens whose iss is another issuer;
//   typ      tokens whose header says typ JWT instead of at+jwt;
//   rs       the resource server itself, to introspect tokens.
// Every token is signed by the AS with its own key: the deviations are the AS's own
// doing (formats.customizers.jwt), not edits after the fact.

import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';

import Provider from 'oidc-provider';

const [resource, otherResource, opaqueResource, mode] = process.argv.slice(2);
const tls = mode === '--tls';
if (!resource || !otherResource || !opaqueResource || (mode !== undefined && !tls)) {
  console.error('usage: node server.mjs RESOURCE OTHER_RESOURCE OPAQUE_RESOURCE [--tls]');
  process.exit(2);
}
const resources = new Set([resource, otherResource, opaqueResource]);
const scopes = 'mcp:read mcp:tools mcp:admin';

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'as-rsa-1', use: 'sig', alg: 'RS256' };

const client = (id) => ({
  client_id: id,
  client_secret: `secret-${id}`,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  token_endpoint_auth_method: 'client_secret_basic',
});

const server = tls
  ? createTlsServer({
    cert: readFileSync(new URL('tls/server.pem', import.meta.url)),
    key: readFileSync(new URL('tls/server-key.pem', import.meta.url)),
  })
  : createServer();
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: ['good', 'expired', 'early', 'foreign', 'typ', 'rs'].map(client),
    jwks: { keys: [signingKey] },
    ttl: { ClientCredentials: 300 },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true, allowedPolicy: async () => true },
      revocation: { enabled: true, allowedPolicy: async () => true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx, _client, oneOf) => oneOf,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, indicator) => {
          if (!resources.has(indicator)) throw new Provider.errors.InvalidTarget();
          return {
            scope: scopes,
            audience: indicator,
            accessTokenTTL: 300,
            accessTokenFormat: indicator === opaqueResource ? 'opaque' : 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    formats: {
      customizers: {
        jwt: async (_ctx, token, jwt) => {
          const now = jwt.payload.iat;
          switch (token.clientId) {
            case 'expired':
              jwt.payload.exp = now - 3600;
              break;
            case 'early':
              jwt.payload.nbf = now + 3600;
              break;
            case 'foreign':
              jwt.payload.iss = 'https://another-issuer.example';
              break;
            case 'typ':
              jwt.header = { typ: 'JWT' };
              break;
            default:
          }
        },
      },
    },
  });
  // Quiet: the test reads stdout for the one line below.
  provider.on('server_error', (_ctx, err) => console.error('server_error', err));
  server.on('request', provider.callback());
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
