import { unknownApiPath } from "@/lib/api/public-route";

// No request body is ever read.
export const config = { api: { bodyParser: false } };

export default unknownApiPath;
