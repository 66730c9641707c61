package odradek.jvm.client;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import odradek.jvm.Json;

/**
 * Runs named checks and prints one JSON line per check: {@code {"name", "ok", "details"}}.
 * A check fails by throwing: {@link #expect} and {@link #equal} throw with what differed, and
 * any exception from the client fails the check with its type and message.
 */
final class Checks {
  /** A check's body: records what it saw into {@code details}, throws when it is wrong. */
  interface Body {
    void run(Map<String, Object> details) throws Exception;
  }

  private Checks() {}

  static void run(String name, Body body) {
    Map<String, Object> details = new LinkedHashMap<>();
    long start = System.nanoTime();
    boolean ok;
    try {
      body.run(details);
      ok = true;
    } catch (Throwable error) {
      ok = false;
      Throwable cause = error instanceof ExecutionException && error.getCause() != null
          ? error.getCause() : error;
      details.put("error", cause.getClass().getName() + ": " + cause.getMessage());
      StringWriter trace = new StringWriter();
      cause.printStackTrace(new PrintWriter(trace));
      String text = trace.toString();
      details.put("trace", text.length() > 2000 ? text.substring(0, 2000) : text);
    }
    details.put("ms", (System.nanoTime() - start) / 1_000_000);
    Map<String, Object> line = new LinkedHashMap<>();
    line.put("name", name);
    line.put("ok", ok);
    line.put("details", details);
    System.out.println(Json.object(line));
    System.out.flush();
  }

  /** Retries {@code body} until it passes (for what the cluster applies asynchronously, as
   * Kafka does: metadata reaches each broker in its own time), at most a minute. */
  static void eventually(Body body, Map<String, Object> details) throws Exception {
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (true) {
      try {
        body.run(details);
        return;
      } catch (AssertionError error) {
        if (System.nanoTime() > deadline) {
          throw error;
        }
        Thread.sleep(200);
      }
    }
  }

  /** A call that must fail. */
  interface Call {
    void run() throws Exception;
  }

  /** Runs {@code call}, which must fail with Kafka's {@code error} (an exception's simple
   * class name, as the client maps the broker's error code). */
  static void refused(String error, String what, Call call) throws Exception {
    try {
      call.run();
    } catch (ExecutionException failure) {
      equal(error, failure.getCause().getClass().getSimpleName(), what);
      return;
    }
    throw new AssertionError(what + " succeeded; expected " + error);
  }

  static void expect(boolean condition, String what) {
    if (!condition) {
      throw new AssertionError(what);
    }
  }

  static void equal(Object expected, Object actual, String what) {
    if (!Objects.equals(expected, actual)) {
      throw new AssertionError(what + ": expected " + expected + ", got " + actual);
    }
  }
}
