//! The worker pool of a loop whose server may block: requests and heads are handed to
//! it, so one slow request (a statement, a cold SQLite page) never stalls the loop.
//!
//! In order: the loop polls a connection; a request or a head goes to the pool as a
//! [`Job`] and the connection is marked busy (it reads nothing more, so a pipelining
//! client waits in its socket buffers); a worker answers it with the [`Service`] and
//! sends a [`Done`] back, then wakes the loop through its [`Waker`]; the loop applies the
//! answer to the connection if it is still the one the job came from (slab keys are
//! reused, connection ids are not), and drives it again.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};

use dunning_core::Response;
use dunning_core::dispatch::Dispatch;
use dunning_http1::OwnedRequest;
use dunning_runtime::{Admission, Service};
use mio::Waker;

/// What a connection hands over.
pub(crate) enum Work {
    /// A whole request: answer it.
    Request(OwnedRequest),
    /// A head whose body is not read yet: decide it.
    Head(OwnedRequest),
}

/// What comes back.
pub(crate) enum Answer {
    /// The response to a [`Work::Request`].
    Response(Response),
    /// The decision on a [`Work::Head`], with the head.
    Admission(OwnedRequest, Admission),
}

/// One piece of work of connection `id` (slab key `key`).
pub(crate) struct Job {
    pub(crate) key: usize,
    pub(crate) id: u64,
    pub(crate) work: Work,
}

/// Its answer.
pub(crate) struct Done {
    pub(crate) key: usize,
    pub(crate) id: u64,
    pub(crate) answer: Answer,
}

/// The workers and the two channels.
pub(crate) struct Pool {
    jobs: Option<Sender<Job>>,
    done: Receiver<Done>,
    threads: Vec<JoinHandle<()>>,
}

impl Pool {
    /// Starts `workers` threads (at least one) answering with `service`.
    pub(crate) fn start<D: Dispatch + 'static>(
        service: &Arc<Service<D>>,
        workers: usize,
        waker: Arc<Waker>,
    ) -> std::io::Result<Self> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let (finished, done) = mpsc::channel::<Done>();
        let queue = Arc::new(Mutex::new(queue));
        let mut threads = Vec::new();
        for i in 0..workers.max(1) {
            let (service, queue, finished, waker) = (
                Arc::clone(service),
                Arc::clone(&queue),
                finished.clone(),
                Arc::clone(&waker),
            );
            let worker = move || {
                loop {
                    // One worker waits on the queue at a time; the lock is released
                    // before the work is done.
                    let next = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
                    let Ok(Job { key, id, work }) = next else {
                        return; // the loop is gone
                    };
                    let answer = match work {
                        Work::Request(req) => Answer::Response(service.handle(&req)),
                        Work::Head(head) => {
                            let admission = service.check_head(&head);
                            Answer::Admission(head, admission)
                        }
                    };
                    if finished.send(Done { key, id, answer }).is_err() {
                        return;
                    }
                    let _ = waker.wake();
                }
            };
            threads.push(
                thread::Builder::new()
                    .name(format!("dunning-mio-{i}"))
                    .spawn(worker)?,
            );
        }
        Ok(Self {
            jobs: Some(jobs),
            done,
            threads,
        })
    }

    /// Queues a job.
    pub(crate) fn submit(&self, job: Job) {
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(job);
        }
    }

    /// The answers ready now.
    pub(crate) fn finished(&self) -> impl Iterator<Item = Done> + '_ {
        self.done.try_iter()
    }
}

impl Drop for Pool {
    /// Closes the queue: each worker ends after its current job. They are not joined, so
    /// a request still running past the drain timeout does not hold `serve` back.
    fn drop(&mut self) {
        self.jobs = None;
        self.threads.clear();
    }
}
