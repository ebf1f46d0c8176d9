/**
 * The scroll rule: the transcript follows the stream only while the user is at the bottom. Scrolling up
 * stops following; new content then raises a "new activity" pill instead of moving the view. Reaching the
 * bottom again (by hand or with the pill) follows again. Pure, so it is unit-tested without a DOM.
 */

export interface ScrollMetrics {
  scrollTop: number;
  clientHeight: number;
  scrollHeight: number;
}

/** At the bottom, within `slack` pixels (sub-pixel rounding, a last line partly shown). */
export function atBottom(m: ScrollMetrics, slack = 24): boolean {
  return m.scrollHeight - m.clientHeight - m.scrollTop <= slack;
}

export class ScrollFollower {
  following = true;
  /** New content arrived while not following: the pill shows. */
  unseen = false;

  /** The user (or we) scrolled: follow again only when at the bottom. */
  onScroll(m: ScrollMetrics): void {
    this.following = atBottom(m);
    if (this.following) this.unseen = false;
  }

  /** Content grew: 'scroll' to the bottom when following, else 'pill'. */
  onContent(): 'scroll' | 'pill' {
    if (this.following) return 'scroll';
    this.unseen = true;
    return 'pill';
  }

  /** The user sent a prompt or clicked the pill: jump to the bottom and follow. */
  jump(): void {
    this.following = true;
    this.unseen = false;
  }
}
