/**
 * The client's address as the app's HTTP server determined it (socket peer, or X-Forwarded-For
 * behind TRUST_PROXY=true), handed to pages and server actions in this request header. The server
 * sets it on every request, so a value sent by the client never survives.
 */
export const CLIENT_IP_HEADER = "x-dataset-access-client-ip";
