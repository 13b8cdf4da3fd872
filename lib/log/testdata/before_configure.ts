// Logs before configureLogging is called; log_test.ts checks what reaches stderr.
import { getLogger } from "../mod.ts";

getLogger("default").debug("not shown");
getLogger("default").info("shown before configure", { n: 1 });
getLogger("ads").warn("other scope");
