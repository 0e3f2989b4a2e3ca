package io.lakeconnect.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The oracle: runs a corpus of cases through Kafka's own transforms, predicates, converters and FileStream
 * tasks, and prints what they produce. One JVM for a whole corpus (the test session starts it once).
 *
 * <p>Input: JSON lines (stdin, or the file named by the first argument), one case each, {"id", "kind", ...};
 * kind "chain" (default, see {@link Chain}), "read" (see {@link Read}), "filesource" or "filesink" (see
 * {@link FileStream}).
 * Output: one JSON line per case, in input order, {"id", ...} as each kind describes.
 */
public final class Oracle {
    static final ObjectMapper JSON = new ObjectMapper();

    private Oracle() {
    }

    public static void main(String[] args) throws Exception {
        List<JsonNode> cases = new ArrayList<>();
        try (InputStream in = args.length > 0 ? new FileInputStream(args[0]) : System.in;
             BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            for (String line; (line = reader.readLine()) != null; ) {
                if (!line.isBlank()) {
                    cases.add(JSON.readTree(line));
                }
            }
        }
        // FileStreamSourceTask.poll waits a second at the end of its file: those cases run side by side.
        ExecutorService pool = Executors.newFixedThreadPool(16, r -> {
            Thread t = new Thread(r, "oracle-case");
            t.setDaemon(true);
            return t;
        });
        List<Future<ObjectNode>> results = new ArrayList<>();
        for (JsonNode c : cases) {
            results.add(pool.submit(() -> run(c)));
        }
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        for (Future<ObjectNode> result : results) {
            out.println(JSON.writeValueAsString(result.get()));
        }
        out.flush();
        pool.shutdownNow();
    }

    static ObjectNode run(JsonNode c) {
        ObjectNode out = JSON.createObjectNode();
        out.put("id", c.path("id").asText());
        try {
            switch (c.path("kind").asText("chain")) {
                case "filesource" -> FileStream.source(c, out);
                case "filesink" -> FileStream.sink(c, out);
                case "read" -> Read.run(c, out);
                default -> Chain.run(c, out);
            }
        } catch (Throwable e) {  // a case that fails as a whole (configure) is an answer, not a crash
            out.removeAll();
            out.put("id", c.path("id").asText());
            out.set("error", error(e));
        }
        return out;
    }

    static ObjectNode error(Throwable e) {
        ObjectNode node = JSON.createObjectNode();
        node.put("class", e.getClass().getName());
        node.put("message", String.valueOf(e.getMessage()));
        return node;
    }
}
