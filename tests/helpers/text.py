"""Real English text for forced-decoding checks (public domain: Darwin, On the Origin of Species, ch. 3)."""

TEXT = (
    "It has been seen in the last chapter that amongst organic beings in a state of nature there is some "
    "individual variability; indeed I am not aware that this has ever been disputed. It is immaterial for us "
    "whether a multitude of doubtful forms be called species or sub-species or varieties; what rank, for "
    "instance, the two or three hundred doubtful forms of British plants are entitled to hold, if the "
    "existence of any well-marked varieties be admitted. But the mere existence of individual variability "
    "and of some few well-marked varieties, though necessary as the foundation for the work, helps us but "
    "little in understanding how species arise in nature. How have all those exquisite adaptations of one "
    "part of the organisation to another part, and to the conditions of life, and of one distinct organic "
    "being to another being, been perfected? We see these beautiful co-adaptations most plainly in the "
    "woodpecker and missel-thrush; and only a little less plainly in the humblest parasite which clings to "
    "the hairs of a quadruped or feathers of a bird; in the structure of the beetle which dives through the "
    "water; in the plumed seed which is wafted by the gentlest breeze; in short, we see beautiful "
    "adaptations everywhere and in every part of the organic world."
)

TEXT += (
    " The term, struggle for existence, is used in a large sense. I should premise that I use this term in "
    "a large and metaphorical sense including dependence of one being on another, and including (which is "
    "more important) not only the life of the individual, but success in leaving progeny. Two canine "
    "animals, in a time of dearth, may be truly said to struggle with each other which shall get food and "
    "live. But a plant on the edge of a desert is said to struggle for life against the drought, though "
    "more properly it should be said to be dependent on the moisture."
)
