import { packTypescriptClient } from "../../lib/clients/typescript-package";
import { runMain } from "../run-main";

/** `npm run client:pack`: the tarball the app serves at /clients/dataset-access-client.tgz (run by `npm run build`). */
await runMain(async () => {
  console.log(`packed ${await packTypescriptClient()}`);
});
