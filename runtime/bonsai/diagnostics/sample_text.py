"""Real English text for the model part of `bonsai measure kv4` (public domain: Dickens, Darwin, Austen)."""

TEXT = """It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of
foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light,
it was the season of Darkness, it was the spring of hope, it was the winter of despair, we had
everything before us, we had nothing before us, we were all going direct to Heaven, we were all going
direct the other way - in short, the period was so far like the present period, that some of its
noisiest authorities insisted on its being received, for good or for evil, in the superlative degree
of comparison only. There were a king with a large jaw and a queen with a plain face, on the throne of
England; there were a king with a large jaw and a queen with a fair face, on the throne of France. In
both countries it was clearer than crystal to the lords of the State preserves of loaves and fishes,
that things in general were settled for ever.

When we look to the individuals of the same variety or sub-variety of our older cultivated plants and
animals, one of the first points which strikes us, is, that they generally differ much more from each
other, than do the individuals of any one species or variety in a state of nature. When we reflect on
the vast diversity of the plants and animals which have been cultivated, and which have varied during
all ages under the most different climates and treatment, I think we are driven to conclude that this
greater variability is simply due to our domestic productions having been raised under conditions of
life not so uniform as, and somewhat different from, those to which the parent-species have been
exposed under nature.

It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in
want of a wife. However little known the feelings or views of such a man may be on his first entering
a neighbourhood, this truth is so well fixed in the minds of the surrounding families, that he is
considered the rightful property of some one or other of their daughters. "My dear Mr. Bennet," said
his lady to him one day, "have you heard that Netherfield Park is let at last?" Mr. Bennet replied that
he had not. "But it is," returned she; "for Mrs. Long has just been here, and she told me all about
it." Mr. Bennet made no answer. "Do you not want to know who has taken it?" cried his wife
impatiently. "You want to tell me, and I have no objection to hearing it." This was invitation enough.
"""
