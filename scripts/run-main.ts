/**
 * Runs a script's main function and exits with its code, so that open handles (a connection
 * pool, the embedded server's child process) can neither keep the script alive nor change how
 * it ends. An unexpected error is reported in one line, without a stack trace.
 */
export async function runMain(main: () => Promise<number | void>): Promise<never> {
  let code = 1;
  try {
    code = (await main()) ?? 0;
  } catch (error) {
    console.error(`error: ${(error as Error).message}`);
  }
  process.exit(code);
}
