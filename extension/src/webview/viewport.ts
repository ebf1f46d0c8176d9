/**
 * The transcript's scrolling in the page: follow the stream while at the bottom (the rule is scroll.ts's),
 * the "↓ New activity" pill, our own scrolls told from the user's, and following once per frame.
 */
import { atBottom, ScrollFollower } from './scroll';

// The transcript's messages are laid out only near the view (`content-visibility: auto` in chat.css: a
// 300-turn replay then lays out one screenful, not every turn); until shown, one that never was counts at
// an estimated height. A jump to the bottom lands where the estimates said and the messages it brings into
// view take their real height in the next frame, so while following, the view goes to the bottom again
// for a few frames (a user scroll meanwhile stops following, and this).
const SETTLE_FRAMES = 4;

export class Viewport {
  readonly follower = new ScrollFollower();
  // Where our own last scroll put the view. Its scroll event is not the user's (content may have grown
  // since, so it would look like "scrolled up"); but a user scroll coalesced into the same event leaves the
  // view elsewhere, so only an event that finds the view where we put it is ignored.
  private programmaticTop: number | null = null;
  private settleLeft = 0;
  private settling = false;
  private followPending = false;
  /** Hidden by the host: whether the view followed when it was hidden (it does again when shown). */
  private hiddenFollowing: boolean | null = null;
  /** The scroll position at the last scroll event: which way the next one went. */
  private lastTop: number;

  constructor(
    private readonly transcript: HTMLElement,
    private readonly pill: HTMLButtonElement,
  ) {
    this.lastTop = transcript.scrollTop;
    transcript.addEventListener('scroll', () => {
      const ours = this.programmaticTop !== null && Math.abs(transcript.scrollTop - this.programmaticTop) <= 1;
      this.programmaticTop = null;
      const up = transcript.scrollTop < this.lastTop;
      this.lastTop = transcript.scrollTop;
      if (ours || this.hiddenFollowing !== null || noRoom(transcript)) return;
      // Only a scroll up leaves the bottom. The browser also scrolls down by itself: scroll anchoring when a
      // card comes in (the position moves a few px, short of the new bottom), the frame shrinking to nothing
      // when the panel is hidden (before the host's "hidden" message, late on a loaded machine). Taken for
      // the user's scroll-up, those stopped following, and the newest content was below the fold when the
      // user came back from approving in a notification. A following view stays at the bottom through them.
      if (!up && this.follower.following) {
        if (!atBottom(transcript, 1)) this.scrollToBottom();
        return;
      }
      this.follower.onScroll(transcript);
      pill.hidden = !this.follower.unseen;
      document.body.dataset.following = String(this.follower.following);
    });
    pill.addEventListener('click', () => this.jumpToBottom());
    // Shown again, or resized (the side bar, the footer growing): a view that follows is put back at the
    // bottom. What arrived while hidden was laid out against no height.
    new ResizeObserver(() => {
      if (!noRoom(transcript) && this.follower.following) this.scrollToBottom();
    }).observe(transcript);
  }

  /**
   * The view was hidden or shown (the host says so). While hidden nothing the browser does to the scroll
   * position is the user's; shown again, a view that followed when it was hidden is at the newest content.
   */
  visible(on: boolean): void {
    if (!on) {
      if (this.hiddenFollowing === null) this.hiddenFollowing = this.follower.following;
      document.body.dataset.hiddenFollowing = String(this.hiddenFollowing);
      return;
    }
    const followed = this.hiddenFollowing;
    this.hiddenFollowing = null;
    if (followed !== false) this.jumpToBottom();
  }

  scrollToBottom(): void {
    this.toBottom();
    this.settleAtBottom();
  }

  private toBottom(): void {
    const t = this.transcript;
    const before = t.scrollTop;
    t.scrollTop = t.scrollHeight;
    if (Math.abs(t.scrollTop - before) > 1) this.programmaticTop = t.scrollTop;
  }

  private settleAtBottom(): void {
    this.settleLeft = SETTLE_FRAMES;
    if (this.settling) return;
    this.settling = true;
    const step = (): void => {
      if (!this.follower.following || this.settleLeft <= 0) {
        this.settling = false;
        return;
      }
      this.settleLeft -= 1;
      if (!atBottom(this.transcript, 1)) this.toBottom();
      requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
  }

  /** Content grew: follow when at the bottom, else show the pill. Reads the layout (scrollHeight). */
  followContent(): void {
    if (this.follower.onContent() === 'scroll') this.scrollToBottom();
    this.pill.hidden = !this.follower.unseen;
    document.body.dataset.following = String(this.follower.following);
  }

  // Content changes are followed once per animation frame, not once per update: reading scrollHeight after
  // each change forced a layout of the whole transcript per `session/update` (a 300-turn replay is ~2,700 of
  // them, each laying out a transcript that keeps growing).
  contentChanged(): void {
    if (this.followPending) return;
    this.followPending = true;
    requestAnimationFrame(() => {
      this.followPending = false;
      this.followContent();
    });
  }

  jumpToBottom(): void {
    this.follower.jump();
    this.pill.hidden = true;
    document.body.dataset.following = 'true';
    this.scrollToBottom();
  }

  /** The transcript was cleared: follow from the top again. */
  reset(): void {
    this.follower.jump();
    this.pill.hidden = true;
  }

  /** Puts `piece` above everything in the transcript; the view keeps to the bottom, or to what the user looks at. */
  prepend(piece: DocumentFragment): void {
    const t = this.transcript;
    const fromBottom = this.follower.following ? null : t.scrollHeight - t.scrollTop;
    t.prepend(piece);
    if (fromBottom === null) {
      this.scrollToBottom();
    } else {
      t.scrollTop = t.scrollHeight - fromBottom;
      this.programmaticTop = t.scrollTop;
    }
  }
}

/** The transcript has no room to show anything (its frame hidden, collapsed to its padding). */
function noRoom(t: HTMLElement): boolean {
  const css = getComputedStyle(t);
  return t.clientHeight - parseFloat(css.paddingTop) - parseFloat(css.paddingBottom) < 1;
}
