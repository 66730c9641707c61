package odradek.jvm.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.utils.Exit;

/**
 * Runs many of Kafka's command-line tools in one JVM, one after the other, each through its
 * own {@code main} exactly as its bin/ script would, with its stdin, stdout and stderr
 * captured and its {@code Exit.exit} caught (Kafka's own tool tests do the same). JVM starts
 * are the cost of running Kafka's tools; this pays one for a whole batch.
 *
 * <p>{@code RunTools SPEC.json RESULTS.jsonl}: the spec is a JSON array of
 * {@code {"name", "main", "args": [...], "stdin"?: "...", "timeout_s"?: n}}; each result is one
 * JSON line {@code {"name", "exit", "stdout", "stderr"}} (exit -1: an exception escaped main,
 * -2: the tool was still running after its timeout).
 */
public final class RunTools {
  private RunTools() {}

  /** What a caught {@code Exit.exit} throws to leave the tool's main. */
  static final class ExitCalled extends RuntimeException {
    final int code;

    ExitCalled(int code) {
      super("exit " + code, null, false, false);
      this.code = code;
    }
  }

  /** The first exit status the running tool asked for (a tool may catch the first exit). */
  private static volatile Integer firstExit;

  private static void exit(int code, String message) {
    if (firstExit == null) {
      firstExit = code;
    }
    throw new ExitCalled(code);
  }

  public static void main(String[] args) throws Exception {
    ObjectMapper mapper = new ObjectMapper();
    JsonNode spec = mapper.readTree(new File(args[0]));
    Path results = Path.of(args[1]);
    Exit.setExitProcedure(RunTools::exit);
    Exit.setHaltProcedure(RunTools::exit);
    Exit.setShutdownHookAdder((name, hook) -> { });
    PrintStream out = System.out;
    PrintStream err = System.err;
    InputStream in = System.in;
    List<String> lines = new ArrayList<>();
    for (JsonNode step : spec) {
      ByteArrayOutputStream stdout = new ByteArrayOutputStream();
      ByteArrayOutputStream stderr = new ByteArrayOutputStream();
      System.setOut(new PrintStream(stdout, true, StandardCharsets.UTF_8));
      System.setErr(new PrintStream(stderr, true, StandardCharsets.UTF_8));
      String input = step.path("stdin").asText("");
      System.setIn(new ByteArrayInputStream(input.getBytes(StandardCharsets.UTF_8)));
      int code;
      try {
        code = run(step);
      } finally {
        System.out.flush();
        System.err.flush();
        System.setOut(out);
        System.setErr(err);
        System.setIn(in);
      }
      ObjectNode result = mapper.createObjectNode();
      result.put("name", step.get("name").asText());
      result.put("exit", code);
      result.put("stdout", stdout.toString(StandardCharsets.UTF_8));
      result.put("stderr", stderr.toString(StandardCharsets.UTF_8));
      lines.add(mapper.writeValueAsString(result));
      Files.write(results, lines, StandardCharsets.UTF_8);
      err.println("RunTools: " + step.get("name").asText() + " exited " + code);
    }
    Runtime.getRuntime().halt(0);  // tools may leave non-daemon threads behind
  }

  private static int run(JsonNode step) throws Exception {
    Method main = Class.forName(step.get("main").asText()).getMethod("main", String[].class);
    List<String> argv = new ArrayList<>();
    step.get("args").forEach(arg -> argv.add(arg.asText()));
    AtomicInteger code = new AtomicInteger(0);
    firstExit = null;
    Thread thread = new Thread(() -> {
      try {
        main.invoke(null, (Object) argv.toArray(new String[0]));
      } catch (InvocationTargetException e) {
        code.set(exitOf(e.getCause()));
      } catch (ReflectiveOperationException e) {
        code.set(exitOf(e));
      }
    }, "tool-" + step.get("name").asText());
    thread.setDaemon(true);
    thread.start();
    thread.join(step.path("timeout_s").asLong(120) * 1000);
    if (thread.isAlive()) {
      thread.interrupt();
      return -2;
    }
    return firstExit != null ? firstExit : code.get();
  }

  private static int exitOf(Throwable thrown) {
    for (Throwable t = thrown; t != null; t = t.getCause()) {
      if (t instanceof ExitCalled called) {
        return called.code;
      }
    }
    StringWriter trace = new StringWriter();
    thrown.printStackTrace(new PrintWriter(trace));
    System.err.print(trace);
    return -1;
  }
}
