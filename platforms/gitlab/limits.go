package gitlab

// commentLimit is GitLab's largest note body: the notes API documents
// "Limited to 1,000,000 characters", and longer ones are refused with 400
// "Note {:note=>["is too long (maximum is 1000000 characters)"]}"
// (runatlantis/atlantis#1755, NARKOZ/gitlab#610).
const commentLimit = 1_000_000

// CommentLimit is the largest comment body GitLab accepts, in characters.
func (t *Tracker) CommentLimit() int { return commentLimit }
