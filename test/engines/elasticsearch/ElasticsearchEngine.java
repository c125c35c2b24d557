import com.carrotsearch.randomizedtesting.RandomizedRunner;
import com.carrotsearch.randomizedtesting.annotations.ThreadLeakScope;
import com.carrotsearch.randomizedtesting.annotations.Timeout;
import com.carrotsearch.randomizedtesting.annotations.TimeoutSuite;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.node.MockNode;
import org.elasticsearch.transport.netty4.Netty4Plugin;
import org.junit.Test;
import org.junit.runner.RunWith;

/**
 * Runs one Elasticsearch node (HTTP on es.engine.http) until stdin closes. It is a JUnit test run by
 * `org.junit.runner.JUnitCore ElasticsearchEngine` because the test framework's MockNode needs the
 * randomized-testing context; the node itself is the real server code.
 */
@RunWith(RandomizedRunner.class)
@ThreadLeakScope(ThreadLeakScope.Scope.NONE)
@TimeoutSuite(millis = Integer.MAX_VALUE)
public class ElasticsearchEngine {
  @Test
  @Timeout(millis = Integer.MAX_VALUE)
  public void serve() throws Exception {
    Path home = Paths.get(System.getProperty("es.engine.home"));
    Settings settings = Settings.builder()
        .put("path.home", home.toString())
        .put("path.data", home.resolve("data").toString())
        .put("cluster.name", "cards-test")
        .put("node.name", "es-1")
        .put("network.host", "127.0.0.1")
        .put("http.port", System.getProperty("es.engine.http"))
        .put("transport.port", System.getProperty("es.engine.transport"))
        .put("discovery.type", "single-node")
        .put("http.type", Netty4Plugin.NETTY_HTTP_TRANSPORT_NAME)
        .put("transport.type", Netty4Plugin.NETTY_TRANSPORT_NAME)
        // One node: replicas could never be assigned and would keep indices yellow.
        .put("cluster.routing.allocation.disk.threshold_enabled", false)
        .build();
    MockNode node = new MockNode(settings, List.of(Netty4Plugin.class));
    node.start();
    System.out.println("READY");
    System.out.flush();
    while (System.in.read() != -1) {
      // the parent keeps stdin open while it wants the node
    }
    node.close();
    Runtime.getRuntime().halt(0);
  }
}
