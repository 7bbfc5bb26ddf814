package github

// commentLimit is GitHub's largest issue comment body: longer ones are
// refused with 422 "Body is too long (maximum is 65536 characters)", as
// reported in danger/danger#424 and telia-oss/github-pr-resource#259.
const commentLimit = 65536

// CommentLimit is the largest comment body GitHub accepts, in characters.
func (t *Tracker) CommentLimit() int { return commentLimit }
