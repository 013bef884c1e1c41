//! Hostile and awkward clients over real loopback sockets, against every adapter (in
//! parallel threads). After each, the same server must answer a normal request.

use std::io::Write;
use std::net::{Shutdown, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use dunning_e2e::gate::gate_server;
use dunning_e2e::observe::Counts;
use dunning_e2e::{
    Adapter, Running, Split, body, call_request, connect, discover_request, exchange, header,
    read_response, read_to_close, start, status, tools_list_request,
};
use dunning_runtime::{CAP_BODY, CloseReason, Options};
use dunning_tests::test_server;

const TOO_LARGE: &str = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request body too large (limit 2097152 bytes)"}}"#;

/// Runs `f` for each adapter in its own thread; a panic names the adapter.
fn each(adapters: &[Adapter], f: impl Fn(Adapter) + Sync) {
    thread::scope(|s| {
        let handles: Vec<_> = adapters
            .iter()
            .map(|&a| {
                (
                    a,
                    s.spawn({
                        let f = &f;
                        move || f(a)
                    }),
                )
            })
            .collect();
        for (a, h) in handles {
            if h.join().is_err() {
                panic!("{} failed (see above)", a.name());
            }
        }
    });
}

/// The test server on `adapter` with `opts`, observed by the returned counts.
fn serve(adapter: Adapter, opts: Options) -> (Running, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let running = start(adapter, Arc::new(test_server()), opts, counts.clone()).unwrap();
    (running, counts)
}

fn small_pool() -> Options {
    Options {
        workers: 4,
        ..Options::default()
    }
}

/// A normal request on a new connection is answered 200.
fn answers_normally(addr: SocketAddr, who: Adapter) {
    let raw = exchange(addr, &discover_request(), Split::Whole).unwrap();
    assert_eq!(
        status(&raw),
        Some(200),
        "{}: {}",
        who.name(),
        String::from_utf8_lossy(&raw)
    );
}

/// Sends `raw` without half-closing and reads until the server closes.
fn send_and_read_to_close(addr: SocketAddr, raw: &[u8]) -> Vec<u8> {
    let mut s = connect(addr).unwrap();
    let _ = s.write_all(raw);
    read_to_close(&mut s).expect("the server closes the connection")
}

#[test]
fn smuggling_vectors_get_400_and_close() {
    let head = "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-owner\r\n\
                Content-Type: application/json\r\n";
    let long_ext = format!("5;{}\r\nhello\r\n0\r\n\r\n", "a".repeat(2000));
    let vectors: Vec<(&str, Vec<u8>)> = vec![
        (
            "CL+TE",
            format!("{head}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
                .into(),
        ),
        (
            "differing CL",
            format!("{head}Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!").into(),
        ),
        (
            "gzip, chunked",
            format!("{head}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n").into(),
        ),
        (
            "obs-fold",
            format!("{head}X-Folded: a\r\n b\r\nContent-Length: 0\r\n\r\n").into(),
        ),
        (
            "space before colon",
            format!("{head}Content-Length : 2\r\n\r\n{{}}").into(),
        ),
        (
            "bad chunk size",
            format!("{head}Transfer-Encoding: chunked\r\n\r\nzz\r\nhi\r\n0\r\n\r\n").into(),
        ),
        (
            "chunk-ext too long",
            format!("{head}Transfer-Encoding: chunked\r\n\r\n{long_ext}").into(),
        ),
        (
            "NUL in header",
            format!("{head}X-A: a\0b\r\nContent-Length: 0\r\n\r\n").into(),
        ),
        (
            "bare CR in header",
            format!("{head}X-A: a\rb\r\nContent-Length: 0\r\n\r\n").into(),
        ),
    ];
    each(&Adapter::ALL, |a| {
        let (running, _) = serve(a, small_pool());
        for (name, raw) in &vectors {
            let got = send_and_read_to_close(running.addr(), raw);
            assert_eq!(
                status(&got),
                Some(400),
                "{} / {name}: {}",
                a.name(),
                String::from_utf8_lossy(&got)
            );
            assert_eq!(
                header(&got, "connection").as_deref(),
                Some("close"),
                "{} / {name}",
                a.name()
            );
            answers_normally(running.addr(), a);
        }
        running.stop().unwrap();
    });
}

#[test]
fn chunked_body_of_3_mb_gets_413_with_the_exact_body() {
    each(&Adapter::ALL, |a| {
        let (running, _) = serve(a, small_pool());
        let mut s = connect(running.addr()).unwrap();
        let mut w = s.try_clone().unwrap();
        let writer = thread::spawn(move || {
            let head = "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-owner\r\n\
                        Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
            let _ = w.write_all(head.as_bytes());
            let chunk = [b' '; 64 * 1024];
            for _ in 0..48 {
                if w.write_all(b"10000\r\n").is_err()
                    || w.write_all(&chunk).is_err()
                    || w.write_all(b"\r\n").is_err()
                {
                    break;
                }
            }
            let _ = w.write_all(b"0\r\n\r\n");
            let _ = w.shutdown(Shutdown::Write);
        });
        let got = read_to_close(&mut s).unwrap();
        writer.join().unwrap();
        assert_eq!(status(&got), Some(413), "{}", a.name());
        assert_eq!(body(&got), TOO_LARGE.as_bytes(), "{}", a.name());
        assert_eq!(header(&got, "connection").as_deref(), Some("close"));
        answers_normally(running.addr(), a);
        running.stop().unwrap();
    });
}

#[test]
fn ten_thousand_headers_are_refused() {
    let mut raw = b"GET /healthz HTTP/1.1\r\nHost: x\r\n".to_vec();
    for i in 0..10_000 {
        raw.extend_from_slice(format!("X-Header-{i}: v\r\n").as_bytes());
    }
    raw.extend_from_slice(b"\r\n");
    each(&Adapter::ALL, |a| {
        let (running, _) = serve(a, small_pool());
        let got = send_and_read_to_close(running.addr(), &raw);
        assert_eq!(
            status(&got),
            Some(431),
            "{}: {}",
            a.name(),
            String::from_utf8_lossy(&got)
        );
        answers_normally(running.addr(), a);
        running.stop().unwrap();
    });
}

#[test]
fn slowloris_is_cut_after_the_header_timeout() {
    each(&Adapter::ALL, |a| {
        let opts = Options {
            header_read_timeout: Duration::from_secs(1),
            ..small_pool()
        };
        let (running, counts) = serve(a, opts);
        let mut s = connect(running.addr()).unwrap();
        let mut w = s.try_clone().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stop_writer = Arc::clone(&stop);
        let started = Instant::now();
        let writer = thread::spawn(move || {
            // One header byte per second, for at most 5 s.
            for &b in b"POST / H" {
                if stop_writer.load(Ordering::SeqCst) || w.write_all(&[b]).is_err() {
                    return;
                }
                for _ in 0..20 {
                    if stop_writer.load(Ordering::SeqCst) {
                        return;
                    }
                    thread::sleep(Duration::from_millis(50));
                }
            }
        });
        let got = read_to_close(&mut s);
        let elapsed = started.elapsed();
        stop.store(true, Ordering::SeqCst);
        writer.join().unwrap();
        assert_eq!(
            got.map(|b| b.len()).unwrap_or(0),
            0,
            "{}: cut without an answer",
            a.name()
        );
        assert!(
            elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(4),
            "{}: cut after {elapsed:?}",
            a.name()
        );
        assert!(counts.wait_until(Duration::from_secs(2), |c| {
            c.saw(CloseReason::HeaderTimeout)
        }));
        answers_normally(running.addr(), a);
        running.stop().unwrap();
    });
}

#[test]
fn idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    each(&Adapter::ALL, |a| {
        let opts = Options {
            idle_timeout: Duration::from_millis(300),
            ..small_pool()
        };
        let (running, counts) = serve(a, opts);
        let mut s = connect(running.addr()).unwrap();
        s.write_all(&discover_request()).unwrap();
        assert_eq!(status(&read_response(&mut s).unwrap()), Some(200));
        let idle = Instant::now();
        assert_eq!(read_to_close(&mut s).unwrap(), b"", "{}", a.name());
        assert!(idle.elapsed() < Duration::from_secs(2), "{}", a.name());
        assert!(counts.wait_until(Duration::from_secs(2), |c| c.saw(CloseReason::IdleTimeout)));
        running.stop().unwrap();
    });
}

#[test]
fn client_disconnecting_mid_body_is_dropped_quietly() {
    each(&Adapter::ALL, |a| {
        let (running, counts) = serve(a, small_pool());
        let mut s = connect(running.addr()).unwrap();
        s.write_all(
            b"POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-owner\r\n\
              Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":",
        )
        .unwrap();
        drop(s);
        assert!(
            counts.wait_until(Duration::from_secs(3), |c| c.opened.load(Ordering::SeqCst)
                == 1
                && c.open() == 0),
            "{}: the connection is released",
            a.name()
        );
        assert_eq!(counts.requests.load(Ordering::SeqCst), 0);
        answers_normally(running.addr(), a);
        running.stop().unwrap();
    });
}

/// Bytes that arrive after a read took everything the socket held are read: a request
/// whose body comes 50 ms after its head, then a second request 50 ms after the first
/// answer, on one keep-alive connection. (The tokio adapter stops waiting on a socket a
/// short read drained, `read_with`; the later bytes must wake it again.)
#[test]
fn bytes_after_a_pause_on_a_kept_connection_are_read() {
    each(&Adapter::ALL, |a| {
        let (running, _) = serve(a, small_pool());
        let mut s = connect(running.addr()).unwrap();
        let request = call_request("test_echo", r#"{"note":"n"}"#);
        let head_end = request.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        s.write_all(&request[..head_end]).unwrap();
        thread::sleep(Duration::from_millis(50));
        s.write_all(&request[head_end..]).unwrap();
        let first = read_response(&mut s).unwrap();
        assert_eq!(status(&first), Some(200), "{}", a.name());
        thread::sleep(Duration::from_millis(50));
        s.write_all(&discover_request()).unwrap();
        let second = read_response(&mut s).unwrap();
        assert_eq!(status(&second), Some(200), "{}", a.name());
        assert!(
            String::from_utf8_lossy(body(&second)).contains("serverInfo"),
            "{}",
            a.name()
        );
        running.stop().unwrap();
    });
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    each(&Adapter::ALL, |a| {
        let (running, _) = serve(a, small_pool());
        let mut raw = discover_request();
        raw.extend_from_slice(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
        raw.extend_from_slice(&call_request("test_echo", r#"{"note":"n"}"#));
        let got = exchange(running.addr(), &raw, Split::Whole).unwrap();
        let text = String::from_utf8_lossy(&got);
        let statuses: Vec<&str> = text
            .match_indices("HTTP/1.1 ")
            .map(|(i, _)| &text[i + 9..i + 12])
            .collect();
        assert_eq!(statuses, ["200", "200", "200"], "{}: {text}", a.name());
        assert!(text.find("serverInfo") < text.find("{\"status\":\"ok\"}"));
        assert!(text.ends_with("}") && text.contains("\"echo\""));
        running.stop().unwrap();
    });
}

#[test]
fn a_thousand_concurrent_keep_alive_connections_on_tokio() {
    let _ = rlimit::increase_nofile_limit(8192);
    // 1,000 connections from one address open before any request: not the per-address
    // cap on unauthenticated connections under test here (hostile_load.rs).
    let opts = Options {
        max_unauthenticated_per_ip: 0,
        ..Options::default()
    };
    let (running, counts) = serve(Adapter::Tokio, opts);
    let mut socks: Vec<_> = (0..1000)
        .map(|_| connect(running.addr()).unwrap())
        .collect();
    let req = discover_request();
    for round in 0..2 {
        for s in &mut socks {
            s.write_all(&req).unwrap();
        }
        for (i, s) in socks.iter_mut().enumerate() {
            let got = read_response(s).unwrap();
            assert_eq!(status(&got), Some(200), "round {round}, connection {i}");
        }
    }
    assert_eq!(counts.opened.load(Ordering::SeqCst), 1000);
    assert_eq!(counts.requests.load(Ordering::SeqCst), 2000);
    drop(socks);
    answers_normally(running.addr(), Adapter::Tokio);
    running.stop().unwrap();
}

#[test]
fn connection_cap_answers_503_with_retry_after() {
    each(&Adapter::ALL, |a| {
        let opts = Options {
            max_connections: 2,
            ..small_pool()
        };
        let (running, counts) = serve(a, opts);
        let mut held: Vec<_> = (0..2)
            .map(|_| {
                let mut s = connect(running.addr()).unwrap();
                s.write_all(&discover_request()).unwrap();
                assert_eq!(status(&read_response(&mut s).unwrap()), Some(200));
                s
            })
            .collect();
        // The refusal comes before any request is read: a client that waits for it.
        let got = read_to_close(&mut connect(running.addr()).unwrap()).unwrap();
        assert_eq!(
            status(&got),
            Some(503),
            "{}: {}",
            a.name(),
            String::from_utf8_lossy(&got)
        );
        assert_eq!(header(&got, "retry-after").as_deref(), Some("1"));
        assert_eq!(body(&got), CAP_BODY.as_bytes());
        // A client that sends first still reads the refusal (lingering close).
        let got = send_and_read_to_close(running.addr(), &discover_request());
        assert_eq!(status(&got), Some(503), "{}", a.name());
        assert!(counts.refused.load(Ordering::SeqCst) >= 1);
        held.pop();
        assert!(counts.wait_until(Duration::from_secs(3), |c| c.open() < 2));
        answers_normally(running.addr(), a);
        drop(held);
        running.stop().unwrap();
    });
}

/// Async adapters run a request inline only on the word of both the dispatcher and the
/// authenticator; a dispatcher that blocks (the gate, the product's store) is never inline.
#[test]
fn only_pure_servers_are_served_inline() {
    assert!(!test_server().may_block());
    assert!(gate_server().0.may_block());
}

/// Every adapter: mio hands a server that may block to its worker pool, so requests are
/// in flight beside each other there too.
#[test]
fn in_flight_cap_answers_503_retry_after_1() {
    each(&Adapter::ALL, |a| {
        let (server, gate) = gate_server();
        let opts = Options {
            max_in_flight: 1,
            ..small_pool()
        };
        let running = start(a, server, opts, Arc::new(Counts::default())).unwrap();
        let addr = running.addr();
        let held =
            thread::spawn(move || exchange(addr, &call_request("gate_wait", "{}"), Split::Whole));
        assert!(
            gate.wait_for_waiters(1, Duration::from_secs(5)),
            "{}",
            a.name()
        );
        let got = exchange(addr, &call_request("ping", "{}"), Split::Whole).unwrap();
        assert_eq!(
            status(&got),
            Some(503),
            "{}: {}",
            a.name(),
            String::from_utf8_lossy(&got)
        );
        assert_eq!(header(&got, "retry-after").as_deref(), Some("1"));
        gate.open();
        let got = held.join().unwrap().unwrap();
        assert_eq!(status(&got), Some(200), "{}", a.name());
        let got = exchange(addr, &call_request("ping", "{}"), Split::Whole).unwrap();
        assert_eq!(status(&got), Some(200), "{}", a.name());
        running.stop().unwrap();
    });
}

/// One request that takes its time (held at the gate) never stalls the others: not on
/// tokio (the blocking pool), not on blocking (another worker), not on mio (its pool; it
/// used to answer inline, stalling the loop).
#[test]
fn a_slow_request_never_stalls_the_others() {
    each(&Adapter::ALL, |a| {
        let (server, gate) = gate_server();
        let running = start(a, server, small_pool(), Arc::new(Counts::default())).unwrap();
        let addr = running.addr();
        let held =
            thread::spawn(move || exchange(addr, &call_request("gate_wait", "{}"), Split::Whole));
        assert!(
            gate.wait_for_waiters(1, Duration::from_secs(5)),
            "{}",
            a.name()
        );
        let started = Instant::now();
        for _ in 0..3 {
            let got = exchange(addr, &call_request("ping", "{}"), Split::Whole).unwrap();
            assert_eq!(status(&got), Some(200), "{}", a.name());
        }
        let took = started.elapsed();
        assert_eq!(gate.waiting(), 1, "{}: still held", a.name());
        assert!(
            took < Duration::from_secs(3),
            "{}: the others waited {took:?} behind the slow one",
            a.name()
        );
        gate.open();
        let got = held.join().unwrap().unwrap();
        assert_eq!(status(&got), Some(200), "{}", a.name());
        running.stop().unwrap();
    });
}

#[test]
fn graceful_shutdown_finishes_the_in_flight_request_then_returns() {
    each(&Adapter::ALL, |a| {
        let (server, gate) = gate_server();
        let opts = Options {
            drain_timeout: Duration::from_secs(5),
            ..small_pool()
        };
        let mut running = start(a, server, opts, Arc::new(Counts::default())).unwrap();
        let addr = running.addr();
        let held =
            thread::spawn(move || exchange(addr, &call_request("gate_wait", "{}"), Split::Whole));
        assert!(
            gate.wait_for_waiters(1, Duration::from_secs(5)),
            "{}",
            a.name()
        );
        running.begin_stop();
        thread::sleep(Duration::from_millis(200));
        assert!(
            !running.finished(),
            "{}: serve waits for the request in flight",
            a.name()
        );
        gate.open();
        let got = held.join().unwrap().unwrap();
        assert_eq!(
            status(&got),
            Some(200),
            "{}: {}",
            a.name(),
            String::from_utf8_lossy(&got)
        );
        let stopping = Instant::now();
        running.stop().unwrap();
        assert!(stopping.elapsed() < Duration::from_secs(3), "{}", a.name());
        assert!(connect(addr).is_err(), "{}: no longer listening", a.name());
    });
}

#[test]
fn blocking_pool_parks_an_idle_connection_for_a_waiting_one() {
    // The only worker does not wait on an idle connection: it hands it back to the poller,
    // which gives it a worker again when its next request comes. Nothing is closed.
    let opts = Options {
        workers: 1,
        ..Options::default()
    };
    let (running, counts) = serve(Adapter::Blocking, opts);
    let mut first = connect(running.addr()).unwrap();
    first.write_all(&discover_request()).unwrap();
    assert_eq!(status(&read_response(&mut first).unwrap()), Some(200));
    let mut second = connect(running.addr()).unwrap();
    for _ in 0..3 {
        for s in [&mut second, &mut first] {
            let waited = Instant::now();
            s.write_all(&discover_request()).unwrap();
            assert_eq!(status(&read_response(s).unwrap()), Some(200));
            assert!(waited.elapsed() < Duration::from_secs(1));
        }
    }
    assert_eq!(counts.open(), 2, "both kept alive");
    assert!(!counts.saw(CloseReason::Drain));
    running.stop().unwrap();
}

#[test]
fn pipelined_flood_from_a_slow_reader_is_answered_in_full() {
    // Large answers (tools/list), far more of them than the socket buffers hold: the
    // server's writes must wait for the reader (tokio awaits, blocking blocks, mio
    // registers WRITABLE and stops reading).
    const N: usize = 2_000;
    each(&Adapter::ALL, |a| {
        let (running, _) = serve(a, small_pool());
        let mut s = connect(running.addr()).unwrap();
        let mut w = s.try_clone().unwrap();
        let writer = thread::spawn(move || {
            let one = tools_list_request();
            let all: Vec<u8> = one.iter().copied().cycle().take(one.len() * N).collect();
            let _ = w.write_all(&all);
            let _ = w.shutdown(Shutdown::Write);
        });
        thread::sleep(Duration::from_millis(300));
        let mut answers = 0;
        let mut size = 0;
        while answers < N {
            let got = read_response(&mut s).unwrap();
            assert_eq!(status(&got), Some(200), "{}, answer {answers}", a.name());
            size += got.len();
            answers += 1;
        }
        assert_eq!(read_to_close(&mut s).unwrap(), b"");
        writer.join().unwrap();
        assert!(size > 8 << 20, "{}: only {size} bytes answered", a.name());
        answers_normally(running.addr(), a);
        running.stop().unwrap();
    });
}
