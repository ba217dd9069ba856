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
  // Writes to a pipe are asynchronous: exiting at once would cut a long output (e.g. an import
  // report) at 64 KiB. A write's callback runs once everything written before it is flushed.
  await Promise.all(
    [process.stdout, process.stderr].map((stream) => new Promise<void>((resolve) => stream.write("", () => resolve()))),
  );
  process.exit(code);
}
