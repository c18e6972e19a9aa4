//! The one way an entry point of this library tells its caller how far it has come.
//!
//! Why: a long run (a read, a RoCE sweep, a fleet of pairs) has something to say while it
//! runs, and only the front end knows how to show it (`dpuctl` draws a bar or a line on
//! stderr, a test records, a script ignores). Each entry point names its progress as an
//! event type of its own (`storage_read::ReadEvent`, `roce::sweep::SweepEvent`, ...) and
//! takes `&mut dyn Observer<ThatEvent>`; nothing here prints.
//!
//! A caller passes a closure (`&mut |event: &ReadEvent| ...`: every `FnMut(&E)` is an
//! [`Observer<E>`]), a type of its own that implements the trait (a progress bar), or
//! [`Ignore`]. An event that borrows from the run (`SweepEvent<'a>`) is taken as
//! `&mut dyn for<'a> Observer<SweepEvent<'a>>`, so the run may lend each event for as
//! short a time as it likes.

/// Receives the progress events of a run, in the order they happen.
///
/// Why a trait and not a closure type: a progress display keeps state between events (the
/// bar it drew on the first one) and reads better as a type with one method; closures still
/// fit through the blanket implementation for `FnMut(&E)`.
pub trait Observer<E: ?Sized> {
    /// Called once for each event, while the run waits.
    fn event(&mut self, event: &E);
}

/// Every closure that takes an event by reference observes it, so a caller with nothing to
/// keep between events writes `&mut |event: &E| ...`.
impl<E: ?Sized, F: FnMut(&E)> Observer<E> for F {
    fn event(&mut self, event: &E) {
        self(event)
    }
}

/// An observer that drops every event: for a caller that shows no progress (`-o json`, a
/// proof reading as its workload, a test).
#[derive(Debug, Clone, Copy, Default)]
pub struct Ignore;

impl<E: ?Sized> Observer<E> for Ignore {
    fn event(&mut self, _: &E) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event that borrows, like the sweep's and the pairs' events.
    enum Borrowed<'a> {
        Named(&'a str),
    }

    fn tell(observer: &mut dyn for<'a> Observer<Borrowed<'a>>, names: &[String]) {
        for name in names {
            observer.event(&Borrowed::Named(name));
        }
    }

    #[test]
    fn a_closure_sees_every_borrowed_event_in_order() {
        let names = vec!["a".to_owned(), "b".to_owned()];
        let mut seen = Vec::new();
        tell(
            &mut |event: &Borrowed<'_>| {
                let Borrowed::Named(name) = event;
                seen.push(name.to_string());
            },
            &names,
        );
        assert_eq!(seen, names);
        // Control: with no names nothing is seen, so the list above came from the events.
        let mut none = Vec::new();
        tell(
            &mut |event: &Borrowed<'_>| {
                let Borrowed::Named(name) = event;
                none.push(name.to_string());
            },
            &[],
        );
        assert!(none.is_empty());
    }

    #[test]
    fn a_type_with_state_observes_and_ignore_observes_anything() {
        struct Count(usize);
        impl Observer<u32> for Count {
            fn event(&mut self, event: &u32) {
                self.0 += *event as usize;
            }
        }
        let mut count = Count(0);
        for n in [1u32, 2, 3] {
            count.event(&n);
        }
        assert_eq!(count.0, 6);
        // Ignore takes any event type, sized or not, and a borrowed one.
        let names = vec!["x".to_owned()];
        tell(&mut Ignore, &names);
        Observer::<str>::event(&mut Ignore, "unsized");
        Observer::<u32>::event(&mut Ignore, &1);
    }
}
