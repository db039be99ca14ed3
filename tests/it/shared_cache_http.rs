//! REAL: a build cache shared over HTTP. A site config's `[build] shared = "http://…"`
//! reaches the real ccache as its HTTP remote storage; a real nvcc 13 compile on one machine
//! (its own CCACHE_DIR) stores its result on the server, a second machine's compile is served
//! from it, and another nvcc never gets those objects. The server is the suite's local HTTP
//! server, storing what ccache PUTs.

use crate::common::server;

use crate::common::real::{another_nvcc, ccache_stat, real_cuda13, SCALE_KERNEL};
use crate::common::*;
use server::Server;

#[test]
fn a_site_cache_over_http_serves_a_second_machine_and_never_another_nvcc() {
    if !have_tool("ccache") || !have_tool("g++") {
        return;
    }
    let Some(cuda13) = real_cuda13() else {
        return;
    };
    let sb = Sandbox::new();
    sb.ok(&["link", "cuda-13.0", cuda13.to_str().unwrap()]);
    let other = sb.path("cuda-13.0-other");
    another_nvcc(&cuda13, &other);
    sb.ok(&["link", "cuda-13.0-other", other.to_str().unwrap()]);

    let store = Server::start();
    store.accept_puts();
    let url = store.url("ccache");
    let site = sb.path("etc/gpuenv/config.toml");
    write(
        &site,
        &format!("[build]\ncache = \"ccache\"\nshared = \"{url}\"\n"),
    );
    let proj = sb.project("proj", "[toolchain]\ncuda = \"13.0\"\n");
    write(&proj.join("k.cu"), SCALE_KERNEL);

    // Each machine has its own local ccache directory; only the HTTP store is shared.
    let compile = |machine: &str, spec: &str| {
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .env("GPUENV_SYSTEM_CONFIG", &site)
            .env("CCACHE_DIR", sb.path(machine))
            .args(["run", spec, "--", "nvcc", "-c", "k.cu", "-o"])
            .arg(format!("k-{machine}.o"))
            .output()
            .unwrap();
        succeeded(&out);
        assert!(proj.join(format!("k-{machine}.o")).is_file());
    };
    let stat = |machine: &str, key: &str| ccache_stat(&sb.path(machine), key);

    compile("one", "cuda-13.0");
    assert_eq!(stat("one", "cache_miss"), 1, "the first machine compiles");
    assert!(
        stat("one", "remote_storage_write") > 0,
        "and writes the store"
    );
    let puts = store.log().iter().filter(|h| h.method == "PUT").count();
    assert!(
        puts > 0,
        "the server received what ccache stored: {:?}",
        store.log()
    );
    assert!(store.log().iter().all(|h| h.path.starts_with("/ccache/")));
    // ccache's default layout: `<url>/<2 characters>/<rest of the key>` (docs/clusters.md
    // tells admins their server must accept a PUT into a new subdirectory).
    let subdir = |p: &str| {
        let key = p.strip_prefix("/ccache/").unwrap_or_default();
        matches!(key.split_once('/'),
            Some((dir, rest)) if dir.len() == 2 && !rest.is_empty() && !rest.contains('/'))
    };
    assert!(
        store
            .log()
            .iter()
            .filter(|h| h.method == "PUT")
            .all(|h| subdir(&h.path)),
        "{:?}",
        store.log()
    );

    compile("two", "cuda-13.0");
    assert_eq!(stat("two", "cache_miss"), 0, "the second compiles nothing");
    assert_eq!(
        stat("two", "remote_storage_hit"),
        1,
        "it is served over HTTP"
    );

    compile("two", "cuda-13.0-other");
    assert_eq!(stat("two", "cache_miss"), 1, "another nvcc misses");
    assert_eq!(
        stat("two", "remote_storage_hit"),
        1,
        "and gets nothing from the store"
    );
}
